#include "ops/cast/cast.h"

namespace rg {

Tensor cast(const Tensor& x, DType dtype) {
  RG_CHECK(x.defined(), "cast: the input is an undefined tensor (target ", dtype, ")");
  // Tensor::to records ToDTypeBackward (gy.to(x.dtype)) for floating targets only.
  return x.to(dtype);
}

}  // namespace rg
