#pragma once
// conv_transpose2d: the adjoint (transpose) of conv2d with respect to its input, as
// torch.nn.functional.conv_transpose2d ("deconvolution", used for learned upsampling).
//
//   x: (N, Ci, H, W)   weight: (Ci, Co/G, kH, kW)   bias: (Co) or undefined   y: (N, Co, Ho, Wo)
//   Ho = (H − 1)·sH − 2·pH + dH·(kH − 1) + opH + 1   (Wo likewise; op = output_padding)
// Each input pixel scatters weight[ci]·x[n, ci, h, w] onto the output window at
// (h·sH − pH, w·sW − pW) (dilated), i.e. y = conv_backward_data<2>(x, weight) for a conv2d
// mapping (N, Co, Ho, Wo) to (N, Ci, H, W) with the same stride, padding, dilation, groups.
// output_padding only picks among the output sizes that conv2d would map back to H: it adds
// rows/columns at the bottom/right (they receive only the bias). It must be smaller than the
// stride or the dilation.
//
// Backward (the roles of conv2d's kernels swap):
//   gx = conv_forward<2>(gy, weight)             (cropped to H × W when output_padding ≥ stride)
//   gW = conv_backward_weight<2>(x, gy)          (conv2d's "gy" is x, its "x" is gy)
//   gb = Σ_{n, ho, wo} gy

#include "ops/conv2d/conv2d.h"

namespace rg {

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                        Conv2dPair stride = {1, 1}, Conv2dPair padding = {0, 0},
                        Conv2dPair output_padding = {0, 0}, int64_t groups = 1,
                        Conv2dPair dilation = {1, 1});

}  // namespace rg
