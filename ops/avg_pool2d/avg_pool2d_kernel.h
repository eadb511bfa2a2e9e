#pragma once
// The kernels of avg_pool2d, on the CPU (avg_pool2d_cpu.cpp) and the GPU (avg_pool2d_kernels.cuh,
// avg_pool2d_cuda.cu). Internal to the ops layer.

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/avg_pool2d/avg_pool2d.h"

namespace rg::detail {

// y (N, C, OH, OW), fresh, from x contiguous (N, C, H, W), on x's device.
void avg_pool2d_forward(OnCpu, const Tensor& x, const Pool2dGeometry& g, CountIncludePad count,
                        const Tensor& y);
void avg_pool2d_forward(OnCuda, const Tensor& x, const Pool2dGeometry& g, CountIncludePad count,
                        const Tensor& y);

// gx (N, C, H, W) from gy contiguous (N, C, OH, OW).
Tensor avg_pool2d_backward(OnCpu, const Tensor& gy, const Pool2dGeometry& g, CountIncludePad count);
Tensor avg_pool2d_backward(OnCuda, const Tensor& gy, const Pool2dGeometry& g,
                           CountIncludePad count);

}  // namespace rg::detail
