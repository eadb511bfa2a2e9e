#pragma once
// The kernels of softmax and log_softmax: one pass finds the lane maximum and the sum of
// exponentials, one writes the result. On the CPU (softmax_cpu.cpp) and the GPU
// (softmax_kernels.cuh, softmax_cuda.cu). Internal to the ops layer.

#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg::detail {

enum class SoftmaxKind { softmax, log_softmax };

// y = softmax(x) or log_softmax(x) along `dim` (already normalised); any floating dtype, on
// x's device.
Tensor softmax_forward(const Tensor& x, int64_t dim, SoftmaxKind kind);
Tensor softmax_forward(OnCpu, const Tensor& x, int64_t dim, SoftmaxKind kind);
Tensor softmax_forward(OnCuda, const Tensor& x, int64_t dim, SoftmaxKind kind);

// softmax:     gx = y · (gy − Σ gy·y)
// log_softmax: gx = gy − exp(y) · Σ gy
Tensor softmax_backward(const Tensor& gy, const Tensor& y, int64_t dim, SoftmaxKind kind);
Tensor softmax_backward(OnCpu, const Tensor& gy, const Tensor& y, int64_t dim, SoftmaxKind kind);
Tensor softmax_backward(OnCuda, const Tensor& gy, const Tensor& y, int64_t dim, SoftmaxKind kind);

}  // namespace rg::detail
