#pragma once
// A convolution's parameters and the output shape they give, for every rank: what the front end
// (conv.h) and the rank's CPU kernels (conv2d/, conv3d/) both need, and nothing else, so that the
// kernels include this and never the front end.
//
//   x: (B, C, S1..SN)   weight: (O, C/G, k1..kN)   y: (B, O, T1..TN)
//   Ta = ⌊(Sa + 2·pa − da·(ka − 1) − 1) / sa⌋ + 1   (s = stride, p = padding, d = dilation)

#include <array>
#include <string>
#include <string_view>

#include "core/tensor.h"

namespace rg {

template <int N>
using ConvSize = std::array<int64_t, N>;  // one value per spatial axis, outermost first

// The ops' names in errors.
template <int N>
inline constexpr std::string_view kConvName = N == 2 ? "conv2d" : "conv3d";
template <int N>
inline constexpr std::string_view kConvTransposeName =
    N == 2 ? "conv_transpose2d" : "conv_transpose3d";

// The spatial axes' letters, for messages: "H, W" or "D, H, W".
template <int N>
inline constexpr const char* kConvAxes = N == 2 ? "H, W" : "D, H, W";
template <int N>
inline constexpr const char* kConvKernelAxes = N == 2 ? "kH, kW" : "kD, kH, kW";
template <int N>
inline constexpr const char* kConvOutputAxes = N == 2 ? "Ho, Wo" : "Do, Ho, Wo";

// "{1, 2}" or "{1, 2, 3}".
template <int N>
std::string conv_size_str(const ConvSize<N>& s) {
  std::string text = "{";
  for (int a = 0; a < N; ++a) text += (a ? ", " : "") + std::to_string(s[a]);
  return text + "}";
}

template <int N>
constexpr ConvSize<N> same_on_every_axis(int64_t v) {
  ConvSize<N> s{};
  s.fill(v);
  return s;
}

template <int N>
struct ConvParams {
  ConvSize<N> stride = same_on_every_axis<N>(1), padding = same_on_every_axis<N>(0),
              dilation = same_on_every_axis<N>(1);
  int64_t groups = 1;
};

using Conv2dPair = ConvSize<2>;  // {height, width}
using Conv2dParams = ConvParams<2>;
using Conv3dTriple = ConvSize<3>;  // {depth, height, width}
using Conv3dParams = ConvParams<3>;

// Which kernels bf16 convolutions take on a CPU with bf16 dot products (AMX, AVX512-BF16):
// by_rule, the default — conv2d/README.md's fixed rule per ISA and shape, so that a shape gets
// the same kernel and bits in every run — or every pass on the tile kernels, or every pass on
// the f32 kernels with the operands widened (exactly) to f32: what bench_ops --bf16-kernels and
// the tests compare. Process-wide.
enum class Bf16ConvKernels { by_rule, tiles, widened };
void set_bf16_conv_kernels(Bf16ConvKernels kernels);
Bf16ConvKernels bf16_conv_kernels();

// Checks x_shape (B, C, S1..SN) against weight_shape (O, C/G, k1..kN) and the params, naming
// `op` in errors; returns y's shape (B, O, T1..TN).
template <int N>
Shape conv_output_shape(std::string_view op, const Shape& x_shape, const Shape& weight_shape,
                        const ConvParams<N>& p);

}  // namespace rg
