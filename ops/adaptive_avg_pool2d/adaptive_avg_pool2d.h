#pragma once
// adaptive_avg_pool2d: average pooling into a fixed output size, whatever the input size.
//   x: (N, C, H, W) -> y: (N, C, OH, OW)
//   bin i of a dim of length H: rows [floor(i·H / OH), ceil((i + 1)·H / OH)) — PyTorch's
//   bins, which overlap by a row when OH does not divide H, and always cover the whole input.
//   y[n, c, i, j] = mean of x over bin i × bin j.
// Backward: every x in a bin receives gy / (bin area); overlapping bins add up. The node keeps
// only the input shape. (1, 1) is global average pooling (ResNet's head).
// Kernels: adaptive_avg_pool2d_kernel.h (CPU: adaptive_avg_pool2d_cpu.cpp; GPU:
// adaptive_avg_pool2d_kernels.cuh).

#include "core/tensor.h"
#include "ops/pool2d/pool2d_window.h"

namespace rg {

// Checks: 4-D floating input with H, W >= 1; output_size >= 1 in both dims.
Tensor adaptive_avg_pool2d(const Tensor& x, Pool2dSize output_size);

}  // namespace rg
