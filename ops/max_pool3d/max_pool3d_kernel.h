#pragma once
// The kernels of max_pool3d, on the CPU (max_pool3d_cpu.cpp) and the GPU (max_pool3d_kernels.cuh,
// max_pool3d_cuda.cu). Internal to the ops layer.

#include <cstdint>

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/max_pool3d/max_pool3d.h"

namespace rg {

// The windows of one call, in plain integers so that a kernel can take it by value.
// Axis 0, 1, 2 = D, H, W.
struct Pool3dGeometry {
  int64_t planes = 0;  // N·C
  int64_t in[3] = {};  // D, H, W
  int64_t out[3] = {};
  int64_t kernel[3] = {}, stride[3] = {}, padding[3] = {}, dilation[3] = {};
  int64_t in_volume() const { return in[0] * in[1] * in[2]; }
  int64_t out_volume() const { return out[0] * out[1] * out[2]; }
};

// Checks x and the window (see max_pool3d.h) and computes the output size.
Pool3dGeometry pool3d_geometry(const char* op, const Tensor& x, Pool3dSize kernel_size,
                               Pool3dSize stride, Pool3dSize padding, Pool3dSize dilation);

namespace detail {

// x contiguous (N, C, D, H, W); output (N, C, OD, OH, OW) and indices (i64) fresh, on x's device.
void max_pool3d_forward(OnCpu, const Tensor& x, const Pool3dGeometry& g, const Tensor& output,
                        const Tensor& indices);
void max_pool3d_forward(OnCuda, const Tensor& x, const Pool3dGeometry& g, const Tensor& output,
                        const Tensor& indices);

// gx (N, C, D, H, W) from gy and indices, both contiguous (N, C, OD, OH, OW).
Tensor max_pool3d_backward(OnCpu, const Tensor& gy, const Tensor& indices, const Pool3dGeometry& g);
Tensor max_pool3d_backward(OnCuda, const Tensor& gy, const Tensor& indices,
                           const Pool3dGeometry& g);

}  // namespace detail
}  // namespace rg
