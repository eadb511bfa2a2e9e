#pragma once
// The kernels of nll_loss, on the CPU (nll_loss_cpu.cpp) and the GPU (nll_loss_kernels.cuh,
// nll_loss_cuda.cu). Internal to the ops layer.

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/nll_loss/class_target.h"

namespace rg::detail {

// The loss and its total weight (formulas in nll_loss.h); checks the targets' range.
ReducedLoss nll_loss_forward(OnCpu, const Tensor& x, const Tensor& target, const Tensor& weight,
                             const ClassTargetArgs& args);
ReducedLoss nll_loss_forward(OnCuda, const Tensor& x, const Tensor& target, const Tensor& weight,
                             const ClassTargetArgs& args);

// gx (x_shape) for the upstream gradient gy (the loss's shape).
Tensor nll_loss_backward(OnCpu, const Tensor& gy, const Tensor& target, const Tensor& weight,
                         const Shape& x_shape, const ClassTargetArgs& args,
                         const Tensor& total_weight);
Tensor nll_loss_backward(OnCuda, const Tensor& gy, const Tensor& target, const Tensor& weight,
                         const Shape& x_shape, const ClassTargetArgs& args,
                         const Tensor& total_weight);

}  // namespace rg::detail
