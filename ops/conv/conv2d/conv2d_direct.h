#pragma once
// Direct (implicit-GEMM) CPU convolution kernels, internal to ops/conv/conv2d.
//
// The trick: pad one image's channels into planes of Hp × Wp = (H + 2·pH) × (W + 2·pW) and
// number the outputs q = ho·Wp + wo, i.e. on the padded width (the columns wo >= Wo are junk,
// computed and dropped). Then, with stride 1, the tap (c, i, j) of output q reads the padded
// input at
//   off[c, i, j] + q,   off[c, i, j] = c·Hp·Wp + i·dH·Wp + j·dW,
// so every row of the im2col matrix is a contiguous slice of the padded image: the GEMM reads
// it in place, with no column matrix and no packing (im2col + Eigen's packing cost as much as
// the GEMM itself for the 16–64-channel convolutions of CIFAR ResNets). The price is the junk
// columns. With stride 1 the left padding of a row doubles as the right padding of the row
// above, so rows are W + pW wide: 1/Wo of extra work for 3x3 kernels (3 % at 32×32, 12.5 % at
// 8×8).
// Stride s: the padded image is first split into s_H·s_W phase planes of Hq × Wq = ⌈Hp/sH⌉ ×
// ⌈Wp/sW⌉ (phase (a, b) holds the pixels (u·sH + a, v·sW + b)); tap (i, j) of every output
// then reads one phase plane with a stride-1 offset, and q = ho·Wq + wo.
//
//   forward          y[o, q]  = Σ_k W[o, k] · xp[off[k] + q]   (for q in whole vectors, or for
//                                                               the valid q only, by channels)
//   backward-weight  gW[o, k] = Σ_n Σ_{valid q} gy[o, q] · xp[off[k] + q]   (or over the
//                                                        rows k of im2col, for small images)
// 3×3 stride-1 forwards of enough channels on AVX2 run as Winograd F(2×2, 3×3) instead
// (conv2d_winograd.h: 2.25 times fewer multiply-adds, on the forward's register tile), and so
// do the backward-weights of 64 channels and more (on the backward-weight's tile).
// Stride-1 backward-data is the forward kernel on gy with the flipped kernel (see conv2d_cpu);
// strided backward-data runs the forward's tile on gy once per phase of gx
// (conv2d_direct_backward_data.cpp).
//
// Results per image do not depend on the thread count; backward-weight over padded images
// sums a fixed part of the batch per thread, as the im2col kernels do, and over gathered rows
// sums each weight over the batch by one thread, in a fixed order.

#include <cstdint>

namespace rg::detail {

// One convolution. x: (N, G·C, H, W), w: (G·O, C, kH, kW), y: (N, G·O, Ho, Wo).
struct DirectConv {
  int64_t N, G, C, H, W;  // batch, groups, input channels per group, image size
  int64_t O;              // output channels per group
  int64_t kH, kW, pH, pW, dH, dW, sH, sW;
  int64_t Ho, Wo;  // = ⌊(H + 2·pH − dH·(kH − 1) − 1) / sH⌋ + 1, W likewise
};

enum class DirectKernel { forward, backward_data, backward_weight };
// Whether the direct kernel is expected to beat im2col + GEMM on this convolution.
bool direct_conv_pays(const DirectConv& g, DirectKernel kernel);

// How the forward is vectorised: along the outputs q (large images), or along the output
// channels, for listed valid outputs of several images at once (small images: no junk columns);
// or Winograd F(2×2, 3×3) for 3×3 stride-1 kernels (conv2d_winograd.cpp), or F(4×4, 3×3) where
// rows of 4×4 tiles fill whole vectors (conv2d_winograd4.cpp).
enum class DirectForward { by_outputs, by_channels, winograd, winograd_4x4 };
// The fastest for g (where direct_conv_pays).
DirectForward direct_forward_kind(const DirectConv& g);
// Whether the Winograd forward computes g: 3×3 kernels, stride 1, no dilation.
bool winograd_applies(const DirectConv& g);
// Whether the F(4×4, 3×3) kernels compute g: the same, on rows of ⌈Wo/4⌉ 4×4 tiles that fill
// whole vectors or a fraction of one (k tiles, k a multiple or divisor of f32's L; where Wo is
// not a multiple of 4 the last tile of a row reaches past it: outputs, or output gradients,
// there are dropped, or read as zeros).
bool winograd4_applies(const DirectConv& g);

// y = conv(x, w) + bias (bias may be null). All tensors contiguous.
template <class T>
void direct_conv_forward(const DirectConv& g, const T* x, const T* w, const T* bias, T* y,
                         DirectForward kind);

// How backward-weight reads x: per pass of a few padded images (the sums of every tap and
// channel added into memory per pass), or over rows of taps gathered across the whole batch
// (small images: each sum stays in registers over ~1024 positions).
// Or Winograd F(2×2, 3×3) for 3×3 stride-1 kernels (conv2d_winograd_backward_weight.cpp),
// each thread summing its part of the batch, or for wide layers the threads sharing the sums;
// or F(4×4, 3×3) where its forward applies (conv2d_winograd4_backward_weight.cpp), either way.
enum class DirectBackwardWeight {
  padded_images,
  gathered_rows,
  winograd,
  winograd_shared_sums,
  winograd_4x4,
  winograd_4x4_shared_sums
};
// The faster of the two for g (where direct_conv_pays).
DirectBackwardWeight direct_backward_weight_kind(const DirectConv& g);

// gw = Σ_n gy ⋆ x, with gy: (N, G·O, Ho, Wo) the full output gradient.
template <class T>
void direct_conv_backward_weight(const DirectConv& g, const T* gy, const T* x, T* gw,
                                 DirectBackwardWeight kind);

// gx = the adjoint of the forward, from gy: (N, G·O, Ho, Wo), for strides above 1 (stride 1
// runs as the forward of the flipped kernel, see conv2d_cpu). By phases of gx: see
// conv2d_direct_backward_data.cpp.
template <class T>
void direct_conv_backward_data(const DirectConv& g, const T* gy, const T* w, T* gx);

}  // namespace rg::detail
