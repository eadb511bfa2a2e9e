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
// The checks, the backward node and the GPU path (cuDNN's N-d graphs) are ops/conv's, written
// once for 2-D and 3-D. ops/conv_transpose3d is the adjoint.

#include "ops/conv/conv.h"

namespace rg {

using Conv3dTriple = ConvSize<3>;  // {depth, height, width}
using Conv3dParams = ConvParams<3>;

Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Conv3dTriple stride = {1, 1, 1}, Conv3dTriple padding = {0, 0, 0},
              Conv3dTriple dilation = {1, 1, 1}, int64_t groups = 1);

}  // namespace rg
