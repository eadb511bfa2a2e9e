#pragma once
// max_pool2d: the maximum over each (dilated) window, with the position it came from.
//   x: (N, C, H, W) -> output: (N, C, OH, OW), indices: (N, C, OH, OW) i64
//   OH = floor((H + 2·PH − DH·(KH − 1) − 1) / SH) + 1 (ceil with CeilMode::on; OW alike)
//   output[n, c, i, j] = max over a, b of x[n, c, i·SH − PH + a·DH, j·SW − PW + b·DW]
// Padding is implicit −inf (never selected). indices hold the flat position ih·W + iw of the
// maximum inside its (H, W) plane, as PyTorch's return_indices=True: the first maximum in
// row-major window order wins ties; a NaN wins over any number (PyTorch propagates NaN).
// Backward: gx[n, c, indices[n, c, i, j]] += gy[n, c, i, j] (overlapping windows add up).
// The node keeps only the indices and the window geometry.
// Kernels: max_pool2d_kernel.h (CPU: max_pool2d_cpu.cpp; GPU: max_pool2d_kernels.cuh). A
// channels-last x runs on the NHWC kernels (max_pool2d_nhwc_cpu.cpp, max_pool2d_nhwc_kernels.cuh)
// and gives channels-last output and indices (indices still ih·W + iw), as PyTorch.

#include "core/tensor.h"
#include "ops/pool2d/pool2d_window.h"

namespace rg {

struct MaxPool2dResult {
  Tensor output;   // differentiable
  Tensor indices;  // i64, no gradient
};

// stride {} (zero) means stride = kernel_size, as PyTorch's stride=None.
// Checks (as PyTorch): 4-D floating input; kernel, stride, dilation > 0; 0 <= padding <=
// kernel_size / 2; an output of at least 1 × 1.
MaxPool2dResult max_pool2d(const Tensor& x, Pool2dSize kernel_size, Pool2dSize stride = {},
                           Pool2dSize padding = 0, Pool2dSize dilation = 1,
                           CeilMode ceil_mode = CeilMode::off);

}  // namespace rg
