#pragma once
// The kernels of max_pool2d, on the CPU (max_pool2d_cpu.cpp) and the GPU (max_pool2d_kernels.cuh,
// max_pool2d_cuda.cu). Internal to the ops layer.

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/pool2d/pool2d_window.h"

namespace rg::detail {

// x contiguous (N, C, H, W); output (N, C, OH, OW) and indices (i64) fresh, on x's device.
void max_pool2d_forward(OnCpu, const Tensor& x, const Pool2dGeometry& g, const Tensor& output,
                        const Tensor& indices);
void max_pool2d_forward(OnCuda, const Tensor& x, const Pool2dGeometry& g, const Tensor& output,
                        const Tensor& indices);

// gx (N, C, H, W) from gy and indices, both contiguous (N, C, OH, OW).
Tensor max_pool2d_backward(OnCpu, const Tensor& gy, const Tensor& indices, const Pool2dGeometry& g);
Tensor max_pool2d_backward(OnCuda, const Tensor& gy, const Tensor& indices,
                           const Pool2dGeometry& g);

// Channels-last: x (N, C, H, W) with NHWC strides; output and indices fresh, channels-last;
// gx channels-last from gy and indices, channels-last. Results equal the NCHW kernels'
// (max_pool2d_nhwc_cpu.cpp; max_pool2d_nhwc_kernels.cuh on a GPU).
void max_pool2d_forward_nhwc(OnCpu, const Tensor& x, const Pool2dGeometry& g, const Tensor& output,
                             const Tensor& indices);
void max_pool2d_forward_nhwc(OnCuda, const Tensor& x, const Pool2dGeometry& g, const Tensor& output,
                             const Tensor& indices);
Tensor max_pool2d_backward_nhwc(OnCpu, const Tensor& gy, const Tensor& indices,
                                const Pool2dGeometry& g);
Tensor max_pool2d_backward_nhwc(OnCuda, const Tensor& gy, const Tensor& indices,
                                const Pool2dGeometry& g);

}  // namespace rg::detail
