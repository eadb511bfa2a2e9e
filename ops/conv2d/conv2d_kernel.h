#pragma once
// conv2d's kernels per backend: Eigen/direct kernels on the CPU (conv2d_cpu.cpp), cuDNN on a
// GPU (conv2d_cuda.cu). The public entry points of conv2d.h dispatch to these by device.

#include <optional>
#include <string>

#include "core/dispatch.h"
#include "ops/conv2d/conv2d.h"

namespace rg {

Tensor conv2d_forward(OnCpu, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& p);
Tensor conv2d_forward(OnCuda, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& p);
Tensor conv2d_backward_data(OnCpu, const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                            const Conv2dParams& p);
Tensor conv2d_backward_data(OnCuda, const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                            const Conv2dParams& p);
Tensor conv2d_backward_weight(OnCpu, const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                              const Conv2dParams& p);
Tensor conv2d_backward_weight(OnCuda, const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                              const Conv2dParams& p);
Tensor conv2d_backward_bias(OnCpu, const Tensor& gy);
Tensor conv2d_backward_bias(OnCuda, const Tensor& gy);

// The CPU kernels' bf16 tile path (conv2d_tiles_ops.cpp): the result, or nullopt where the tile
// kernels do not take the convolution (not bf16, groups > 1, no AMX or AVX512-BF16, padding
// beyond the kernel's reach in backward-data). Inputs checked by the caller.
std::optional<Tensor> conv2d_forward_tiles(const Tensor& x, const Tensor& weight,
                                           const Tensor& bias, const Conv2dParams& p);
std::optional<Tensor> conv2d_backward_data_tiles(const Tensor& gy, const Tensor& weight,
                                                 const Shape& x_shape, const Conv2dParams& p);
std::optional<Tensor> conv2d_backward_weight_tiles(const Tensor& gy, const Tensor& x,
                                                   const Shape& weight_shape,
                                                   const Conv2dParams& p);
// "x [N, C, H, W] w [O, C, kH, kW] s1x1 p1x1 d1x1 g1 bf16": the problem a kernel note names.
std::string conv2d_problem(const Shape& x, const Shape& w, const Conv2dParams& p, DType dtype);

}  // namespace rg
