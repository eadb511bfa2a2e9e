#include "ops/conv3d/conv3d.h"

namespace rg {

Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, Conv3dTriple stride,
              Conv3dTriple padding, Conv3dTriple dilation, int64_t groups) {
  return convolution<3>(x, weight, bias, Conv3dParams{stride, padding, dilation, groups});
}

}  // namespace rg
