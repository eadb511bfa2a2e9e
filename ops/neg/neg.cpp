#include "ops/neg/neg.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/neg/neg_functors.h"

namespace rg {

Tensor neg(const Tensor& x) {
  check_same_float("neg", {x});
  Tensor y = pointwise("neg", NegFn{}, x);
  if (needs_grad({x}))
    record_backward("NegBackward", {x}, y,
                    [](const Tensor& gy) { return pointwise("neg_backward", NegFn{}, gy); });
  return y;
}

Tensor operator-(const Tensor& x) {
  return neg(x);
}

}  // namespace rg
