#include "ops/sqrt/sqrt.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/sqrt/sqrt_functors.h"

namespace rg {

Tensor sqrt(const Tensor& x) {
  check_same_float("sqrt", {x});
  Tensor y = pointwise("sqrt", SqrtFn{}, x);
  if (needs_grad({x}))
    record_backward("SqrtBackward", {x}, y, [y = saved(y)](const Tensor& gy) {
      return pointwise("sqrt_backward", SqrtGradFn{}, gy, y);
    });
  return y;
}

}  // namespace rg
