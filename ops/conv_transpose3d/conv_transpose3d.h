#pragma once
// conv_transpose3d: the adjoint (transpose) of conv3d with respect to its input, as
// torch.nn.functional.conv_transpose3d (learned upsampling: the 3-D UNet decoder's kernel 2,
// stride 2).
//
//   x: (N, Ci, D, H, W)   weight: (Ci, Co/G, kD, kH, kW)   bias: (Co) or undefined
//   y: (N, Co, Do, Ho, Wo),  Do = (D − 1)·sD − 2·pD + dD·(kD − 1) + opD + 1  (Ho, Wo likewise;
//   op = output_padding)
// Each input voxel scatters weight[ci]·x[n, ci, d, h, w] onto the output window at
// (d·sD − pD, h·sH − pH, w·sW − pW) (dilated), i.e. y = conv_backward_data<3>(x, weight) for a
// conv3d mapping (N, Co, Do, Ho, Wo) to (N, Ci, D, H, W) with the same stride, padding,
// dilation and groups. output_padding only picks among the output sizes that conv3d maps back
// to D (H, W): it adds slices at the far end (they receive only the bias). It must be smaller
// than the stride or the dilation.
//
// Backward (the roles of conv3d's kernels swap):
//   gx = conv_forward<3>(gy, weight)             (cropped to D × H × W when output_padding ≥
//   stride) gW = conv_backward_weight<3>(x, gy)          (conv3d's "gy" is x, its "x" is gy) gb =
//   Σ_{n, do, ho, wo} gy
// On the GPU through conv3d's cuDNN kernels, like conv_transpose2d.

#include "ops/conv3d/conv3d.h"

namespace rg {

Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                        Conv3dTriple stride = {1, 1, 1}, Conv3dTriple padding = {0, 0, 0},
                        Conv3dTriple output_padding = {0, 0, 0}, int64_t groups = 1,
                        Conv3dTriple dilation = {1, 1, 1});

}  // namespace rg
