#pragma once
// conv3d: 3-D cross-correlation over a batch of volumes, as torch.nn.functional.conv3d.
//
//   x: (N, C, D, H, W)   weight: (O, C/G, kD, kH, kW)   bias: (O) or undefined
//   y: (N, O, Do, Ho, Wo)
//   G groups: input and output channels are split into G equal blocks; output block g sees only
//   input block g. With s = stride, p = padding, d = dilation (per axis, in the order D, H, W):
//     y[n, o, od, oh, ow] = bias[o] + Σ_{c in group(o), a, i, j} weight[o, c − g·C/G, a, i, j]
//                           · x[n, c, od·sD − pD + a·dD, oh·sH − pH + i·dH, ow·sW − pW + j·dW]
//     Do = ⌊(D + 2·pD − dD·(kD − 1) − 1) / sD⌋ + 1   (Ho, Wo likewise); outside voxels read as 0.
//
// The CPU kernels lower the convolution onto GEMMs through a column matrix (vol2col, the 3-D
// im2col of ops/im2col), per volume, per group, per slab of output depths (see conv3d_cpu.cpp):
//   forward          y   = W · col
//   backward-data    gx  = col2vol(Wᵀ · gy)
//   backward-weight  gW  = Σ_n gy · colᵀ
//   backward-bias    gb  = Σ_{n, od, oh, ow} gy
// ops/conv_transpose3d is the adjoint and reuses these kernels with the roles swapped.
// On a GPU, cuDNN's N-d convolution graphs (ops/conv_cudnn, conv3d_cuda.cu) compute all four.

#include <array>
#include <string_view>

#include "core/tensor.h"

namespace rg {

using Conv3dTriple = std::array<int64_t, 3>;  // {depth, height, width}

Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Conv3dTriple stride = {1, 1, 1}, Conv3dTriple padding = {0, 0, 0},
              Conv3dTriple dilation = {1, 1, 1}, int64_t groups = 1);

// ---- kernels (no autograd), for conv_transpose3d and apps/bench_ops ---------------------------
struct Conv3dParams {
  Conv3dTriple stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  int64_t groups = 1;
};

// Checks x_shape (N, C, D, H, W) against weight_shape (O, C/G, kD, kH, kW) and the params,
// naming `op` in errors; returns y's shape (N, O, Do, Ho, Wo).
Shape conv3d_output_shape(std::string_view op, const Shape& x_shape, const Shape& weight_shape,
                          const Conv3dParams& p);

// y = conv3d(x, weight) + bias (bias may be undefined). any strides; f32, f64, f16 and bf16
// (all operands of one dtype; 16-bit on the CPU computed in f32 and rounded once).
Tensor conv3d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv3dParams& p);
// gx: (N, C, D, H, W) = x_shape, from gy: (N, O, Do', Ho', Wo'). Each of Do', Ho', Wo' may be
// smaller than the size x_shape gives (conv_transpose3d's output_padding): gx is then the
// adjoint of the convolution restricted to those first outputs.
Tensor conv3d_backward_data(const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                            const Conv3dParams& p);
// gW: (O, C/G, kD, kH, kW) = weight_shape, from gy: (N, O, Do', Ho', Wo') and x.
Tensor conv3d_backward_weight(const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                              const Conv3dParams& p);
// gb: (O) = Σ over N, Do, Ho, Wo of gy: (N, O, Do, Ho, Wo).
Tensor conv3d_backward_bias(const Tensor& gy);

}  // namespace rg
