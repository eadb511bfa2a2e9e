#include "ops/conv_transpose3d/conv_transpose3d.h"

namespace rg {

// The checks, the adjoint's kernels and the backward node are ops/conv's (conv.h).
Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        Conv3dTriple stride, Conv3dTriple padding, Conv3dTriple output_padding,
                        int64_t groups, Conv3dTriple dilation) {
  return convolution_transpose<3>(x, weight, bias, Conv3dParams{stride, padding, dilation, groups},
                                  output_padding);
}

}  // namespace rg
