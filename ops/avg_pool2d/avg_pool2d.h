#pragma once
// avg_pool2d: the mean over each window.
//   x: (N, C, H, W) -> y: (N, C, OH, OW), OH = floor((H + 2·PH − KH) / SH) + 1 (ceil with
//   CeilMode::on; OW alike)
//   y[n, c, i, j] = sum of x over the window ∩ input / divisor
// The divisor follows PyTorch exactly: with CountIncludePad::on it is the window's area clipped
// to the padded input (H + 2·PH) — zero padding counts, but the part of a ceil-mode window that
// hangs past the padding does not; with CountIncludePad::off it is the number of real input
// elements in the window.
// Backward: every x in a window receives gy / divisor (overlapping windows add up). The node
// keeps only the geometry.
// Kernels: avg_pool2d_kernel.h (CPU: avg_pool2d_cpu.cpp; GPU: avg_pool2d_kernels.cuh).

#include "core/tensor.h"
#include "ops/pool2d/pool2d_window.h"

namespace rg {

// PyTorch's count_include_pad (default true there and here).
enum class CountIncludePad { off, on };

// stride {} (zero) means stride = kernel_size, as PyTorch's stride=None. Checks as PyTorch:
// 4-D floating input; kernel, stride > 0; 0 <= padding <= kernel_size / 2; output >= 1 × 1.
Tensor avg_pool2d(const Tensor& x, Pool2dSize kernel_size, Pool2dSize stride = {},
                  Pool2dSize padding = 0, CeilMode ceil_mode = CeilMode::off,
                  CountIncludePad count_include_pad = CountIncludePad::on);

}  // namespace rg
