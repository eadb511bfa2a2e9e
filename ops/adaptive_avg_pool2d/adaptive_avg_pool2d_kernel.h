#pragma once
// The kernels of adaptive_avg_pool2d, on the CPU (adaptive_avg_pool2d_cpu.cpp) and the GPU
// (adaptive_avg_pool2d_kernels.cuh, adaptive_avg_pool2d_cuda.cu). Internal to the ops layer.

#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg::detail {

// y (N, C, OH, OW), fresh, from x contiguous (N, C, H, W), on x's device.
void adaptive_avg_pool2d_forward(OnCpu, const Tensor& x, const Tensor& y);
void adaptive_avg_pool2d_forward(OnCuda, const Tensor& x, const Tensor& y);

// gx of input_shape (N, C, H, W) from gy contiguous (N, C, OH, OW).
Tensor adaptive_avg_pool2d_backward(OnCpu, const Tensor& gy, const Shape& input_shape);
Tensor adaptive_avg_pool2d_backward(OnCuda, const Tensor& gy, const Shape& input_shape);

}  // namespace rg::detail
