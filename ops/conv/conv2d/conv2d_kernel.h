#pragma once
// conv2d's CPU kernels (conv2d_cpu.cpp: im2col + Eigen GEMMs, the direct and Winograd kernels),
// which the convolutions' front end (ops/conv) calls through ConvCpuKernels<2>
// (ops/conv/conv_kernel.h).

#include <optional>
#include <string>

#include "core/dispatch.h"
#include "ops/conv/conv_params.h"

namespace rg {

Tensor conv2d_forward(OnCpu, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& p);
Tensor conv2d_backward_data(OnCpu, const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                            const Conv2dParams& p);
Tensor conv2d_backward_weight(OnCpu, const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                              const Conv2dParams& p);
Tensor conv2d_backward_bias(OnCpu, const Tensor& gy);

// The CPU kernels' bf16 tile path (conv2d_tiles_ops.cpp): the result, or nullopt where the tile
// kernels do not take the convolution (not bf16, groups > 1, no AMX or AVX512-BF16, padding
// beyond the kernel's reach in backward-data). Inputs checked by the caller.
std::optional<Tensor> conv2d_forward_tiles(const Tensor& x, const Tensor& weight,
                                           const Tensor& bias, const Conv2dParams& p);
// bias (optional): added to gx in f32 before the rounding — conv_transpose2d's forward, which
// is this backward-data with the transposed convolution's bias.
std::optional<Tensor> conv2d_backward_data_tiles(const Tensor& gy, const Tensor& weight,
                                                 const Shape& x_shape, const Conv2dParams& p,
                                                 const Tensor& bias = Tensor());
std::optional<Tensor> conv2d_backward_weight_tiles(const Tensor& gy, const Tensor& x,
                                                   const Shape& weight_shape,
                                                   const Conv2dParams& p);
// bf16 on this CPU, the tile kernels or the f32 ones: a fixed rule per ISA and shape
// (README.md, "bf16: the tiles or f32, by a rule"; set_bf16_conv_kernels overrides it).
enum class ConvPass { forward, backward_data, backward_weight };
// Whether the tile kernels run `pass` of a bf16 convolution with weight w; else the f32 kernels do,
// on the operands widened exactly to f32, with one rounding of the result.
bool conv2d_tiles_run(const Shape& w, const Conv2dParams& p, ConvPass pass);
// Whether autocast in bf16 leaves the convolution x ⋆ w in f32, on its unrounded inputs: where the
// f32 kernels are faster than the tiles on every pass, the casts would buy nothing but rounding.
bool conv2d_bf16_autocast_keeps_f32(const Shape& x, const Shape& w, const Conv2dParams& p);

// "x [N, C, H, W] w [O, C, kH, kW] s1x1 p1x1 d1x1 g1 bf16": the problem a kernel note names.
std::string conv2d_problem(const Shape& x, const Shape& w, const Conv2dParams& p, DType dtype);

}  // namespace rg
