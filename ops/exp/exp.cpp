#include "ops/exp/exp.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/exp/exp_functors.h"
#include "ops/mul/mul_functors.h"

namespace rg {

Tensor exp(const Tensor& x) {
  check_same_float("exp", {x});
  Tensor y = pointwise("exp", ExpFn{}, x);
  if (needs_grad({x}))
    record_backward("ExpBackward", {x}, y, [y = saved(y)](const Tensor& gy) {
      return pointwise("exp_backward", MulFn{}, gy, y);
    });
  return y;
}

}  // namespace rg
