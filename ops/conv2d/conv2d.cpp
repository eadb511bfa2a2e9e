#include "ops/conv2d/conv2d.h"

namespace rg {

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Conv2dPair stride,
              Conv2dPair padding, Conv2dPair dilation, int64_t groups) {
  return convolution<2>(x, weight, bias, Conv2dParams{stride, padding, dilation, groups});
}

}  // namespace rg
