#pragma once
// bf16 conv3d on the CPU's bf16 dot products (AMX tiles or AVX512-BF16, through
// ops/matmul/gemm_tiles.h): vol2col copies the bf16 volume into bf16 columns (no widening), the
// tile GEMM sums exact products in f32, and each output is rounded once to bf16 — forward (bias
// added in f32 before the rounding), backward-data and backward-weight (summed over the batch in
// f32). conv3d_cpu.cpp tries these first; each returns nullopt (the widening f32 path runs)
// unless the dtype is bf16 and the machine has the tile GEMM (detail::tile_gemm_available()).
// conv_transpose3d runs through them too (its forward is backward-data, with its bias).

#include <optional>

#include "ops/conv/conv_params.h"

namespace rg {

std::optional<Tensor> conv3d_forward_tiles(const Tensor& x, const Tensor& w, const Tensor& bias,
                                           const Conv3dParams& p);
// bias (optional, bf16, one per channel of x): added to gx in f32 before its one rounding, for
// conv_transpose3d's forward (ops/conv/conv.cpp), which is this kernel with a bias.
std::optional<Tensor> conv3d_backward_data_tiles(const Tensor& gy, const Tensor& w,
                                                 const Shape& x_shape, const Conv3dParams& p,
                                                 const Tensor& bias = Tensor());
std::optional<Tensor> conv3d_backward_weight_tiles(const Tensor& gy, const Tensor& x,
                                                   const Shape& weight_shape,
                                                   const Conv3dParams& p);

}  // namespace rg
