#pragma once
// bf16 convolutions on the CPU's 16-bit dot-product hardware, internal to ops/conv/conv2d: AMX
// tiles
// (_tile_dpbf16ps: a 16×16 f32 tile += a 16×32 bf16 tile · a 32×16 one, per instruction) where
// the CPU has AMX, vdpbf16ps (16 f32 lanes += pairs of bf16) where it has AVX512-BF16. Products
// are exact and sums are f32, as cuDNN's bf16 convolutions; each output is rounded once to bf16
// (to nearest even, NaN stays NaN: core/half.h's rule, bit for bit).
//
// The layout is the direct kernels' (conv2d_direct.h) turned into tiles. A chunk of images is
// padded into planes, stacked vertically, and the outputs are numbered on the plane,
// q = (image·Hs + ho)·Ws + wo; then tap (i, j) of output q reads the plane at q plus a fixed
// shift, so a row of a tile is the input at consecutive positions read in place: no column
// matrix. (With stride 1 and "same" padding a row's left padding doubles as the right padding
// of the row above, and an image's bottom padding as the top padding of the next: Ws = W + pW,
// Hs = H + pH. Strides split the padded images into phase planes as the direct kernels do.)
// Positions with wo >= Wo or ho >= Ho are junk: computed and dropped. The operands are
// channels-last so that every tile row is 64 aligned bytes whatever the shift:
//
//   forward          C[q, o] += Σ_{tap, c} x[q + shift(tap), c] · W[o, c, tap]
//                    A tile: 16 positions × 32 channels; B tile: the weight's VNNI tile (16
//                    pairs of channels × 16 output channels); C transposed on the way out.
//                    One-tap layouts (1×1 kernels, folded taps) keep the weights as A and
//                    pairs of channels interleaved per position as B, with no transposes.
//   backward-data    stride 1: the forward of gy with the flipped, transposed weight; stride s:
//                    the same on gy with s − 1 zeros inserted between its pixels.
//   backward-weight  C[o, c] += Σ_q gy[o, q] · x[q + shift(tap), c], per tap
//                    A tile: 16 output channels × 32 positions of gy (zeros at junk positions);
//                    B tile: 16 pairs of positions × 16 channels of x (even or odd pairs, as the
//                    shift is).
// Channels are padded to multiples of 32 and output channels to multiples of 32 with zeros.
// ops/conv/conv2d/README.md has the whole story and the measurements behind each choice.
//
// Denormal bf16 operands and f32 sums flush to zero in the tile instructions (AMX and
// vdpbf16ps do this whatever MXCSR says): values below 1.2e-38, which no training reaches.

#include <cstdint>
#include <string_view>

#include "core/cpu_features.h"
#include "core/half.h"

namespace rg::detail::tiles {

// A convolution as the tile kernels see it: x: (N, C, H, W) → y: (N, O, Ho, Wo), weight
// (O, C, kH, kW). Input pixel (h, w) sits at (pad_top + h·up_h, pad_left + w·up_w) of the
// zero-padded image (up > 1 inserts zeros: the adjoint of a strided convolution).
struct TileConv {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t O = 0, kH = 1, kW = 1;
  int64_t sH = 1, sW = 1, dH = 1, dW = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t up_h = 1, up_w = 1;
  int64_t Ho = 0, Wo = 0;  // set by with_output_size()

  int64_t padded_h() const { return pad_top + (H - 1) * up_h + 1 + pad_bottom; }
  int64_t padded_w() const { return pad_left + (W - 1) * up_w + 1 + pad_right; }
  TileConv& with_output_size();
};

// Which hardware computes the products.
enum class TileIsa { amx, avx512_bf16 };
// The best tile ISA of this machine (cpu_isa(), so RG_MAX_CPU_ISA caps it), or none.
bool tile_isa_available(TileIsa& isa);
std::string_view tile_isa_name(TileIsa isa);

// How the forward reads the weight w: (O, C, kH, kW) as is, or flipped and transposed — w:
// (C', O', kH, kW) read as w'[o, c, i, j] = w[c, o, kH − 1 − i, kW − 1 − j] (backward-data).
enum class WeightOrder { as_is, flipped_transposed };

// y = conv(x, w) + bias. x: (N, C, H, W), w as `order` says, bias: (O) or null, y: (N, O, Ho,
// Wo); every tensor contiguous.
void tile_conv_forward(const TileConv& g, const BFloat16* x, const BFloat16* w, WeightOrder order,
                       const BFloat16* bias, BFloat16* y, TileIsa isa);

// gw = Σ_n gy ⋆ x: (O, C, kH, kW), from gy: (N, O, Ho, Wo) and x: (N, C, H, W).
void tile_conv_backward_weight(const TileConv& g, const BFloat16* gy, const BFloat16* x,
                               BFloat16* gw, TileIsa isa);

// The kernels' rounding of f32 sums to bf16, on a run of n values (for its bit-level test).
// Needs cpu_has(CpuIsa::avx512_bf16).
void round_to_bf16_kernels(const float* in, BFloat16* out, int64_t n);

}  // namespace rg::detail::tiles
