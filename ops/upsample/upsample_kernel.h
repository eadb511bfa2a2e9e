#pragma once
// The kernels of upsample, on the CPU (upsample_cpu.cpp) and the GPU (upsample_kernels.cuh,
// upsample_cuda.cu). Internal to the ops layer.

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/upsample/upsample.h"

namespace rg::detail {

// Images (nearest or bilinear): y (N, C, H·S, W·S), fresh, from x contiguous (N, C, H, W), on x's
// device.
void upsample_forward(OnCpu, const Tensor& x, int64_t scale, UpsampleMode mode, AlignCorners align,
                      const Tensor& y);
void upsample_forward(OnCuda, const Tensor& x, int64_t scale, UpsampleMode mode, AlignCorners align,
                      const Tensor& y);

// gx of input_shape (N, C, H, W) from gy contiguous (N, C, H·S, W·S).
Tensor upsample_backward(OnCpu, const Tensor& gy, const Shape& input_shape, int64_t scale,
                         UpsampleMode mode, AlignCorners align);
Tensor upsample_backward(OnCuda, const Tensor& gy, const Shape& input_shape, int64_t scale,
                         UpsampleMode mode, AlignCorners align);

// Volumes (nearest or trilinear): y (N, C, D·S, H·S, W·S), fresh, from x contiguous
// (N, C, D, H, W) — upsample3d_cpu.cpp and upsample_kernels.cuh.
void upsample3d_forward(OnCpu, const Tensor& x, int64_t scale, UpsampleMode mode,
                        AlignCorners align, const Tensor& y);
void upsample3d_forward(OnCuda, const Tensor& x, int64_t scale, UpsampleMode mode,
                        AlignCorners align, const Tensor& y);

// gx of input_shape (N, C, D, H, W) from gy contiguous (N, C, D·S, H·S, W·S).
Tensor upsample3d_backward(OnCpu, const Tensor& gy, const Shape& input_shape, int64_t scale,
                           UpsampleMode mode, AlignCorners align);
Tensor upsample3d_backward(OnCuda, const Tensor& gy, const Shape& input_shape, int64_t scale,
                           UpsampleMode mode, AlignCorners align);

}  // namespace rg::detail
