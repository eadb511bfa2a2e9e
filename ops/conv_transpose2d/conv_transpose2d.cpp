#include "ops/conv_transpose2d/conv_transpose2d.h"

namespace rg {

// The checks, the adjoint's kernels and the backward node are ops/conv's (conv.h).
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        Conv2dPair stride, Conv2dPair padding, Conv2dPair output_padding,
                        int64_t groups, Conv2dPair dilation) {
  return convolution_transpose<2>(x, weight, bias, Conv2dParams{stride, padding, dilation, groups},
                                  output_padding);
}

}  // namespace rg
