#include "ops/sigmoid/sigmoid.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/sigmoid/sigmoid_functors.h"

namespace rg {

Tensor sigmoid(const Tensor& x) {
  check_same_float("sigmoid", {x});
  Tensor y = pointwise("sigmoid", SigmoidFn{}, x);
  if (needs_grad({x}))
    record_backward("SigmoidBackward", {x}, y, [y = saved(y)](const Tensor& gy) {
      return pointwise("sigmoid_backward", SigmoidGradFn{}, gy, y);
    });
  return y;
}

}  // namespace rg
