#pragma once
// conv2d: 2-D cross-correlation over a batch of images, as torch.nn.functional.conv2d.
//
//   x: (N, C, H, W)   weight: (O, C/G, kH, kW)   bias: (O) or undefined   y: (N, O, Ho, Wo)
//   G groups: input channels and output channels are split into G equal blocks; output block g
//   sees only input block g. With s = stride, p = padding, d = dilation (per axis):
//     y[n, o, ho, wo] = bias[o] + Σ_{c in group(o), i, j}
//                       weight[o, c − g·C/G, i, j] · x[n, c, ho·sH − pH + i·dH, wo·sW − pW + j·dW]
//     Ho = ⌊(H + 2·pH − dH·(kH − 1) − 1) / sH⌋ + 1   (Wo likewise), outside pixels read as 0.
//
// Backward (per image, per group; col = im2col(x), see ops/im2col):
//   forward          y   = W · col
//   backward-data    gx  = col2im(Wᵀ · gy)
//   backward-weight  gW  = Σ_n gy · colᵀ
//   backward-bias    gb  = Σ_{n, ho, wo} gy
// The checks, the backward node and the GPU path are ops/conv's, written once for 2-D and 3-D;
// this folder holds the CPU kernels (README.md). ops/conv_transpose2d is the adjoint.

#include "ops/conv/conv.h"

namespace rg {

using Conv2dPair = ConvSize<2>;  // {height, width}
using Conv2dParams = ConvParams<2>;

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Conv2dPair stride = {1, 1}, Conv2dPair padding = {0, 0}, Conv2dPair dilation = {1, 1},
              int64_t groups = 1);

}  // namespace rg
