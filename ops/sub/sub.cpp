#include "ops/sub/sub.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/neg/neg.h"
#include "ops/sub/sub_functors.h"

namespace rg {

Tensor sub(const Tensor& a_in, const Tensor& b_in) {
  const auto cast = autocast_inputs(AutocastPolicy::promote, a_in, b_in);
  const Tensor &a = cast[0], &b = cast[1];
  check_same_float("sub", {a, b});
  Tensor y = pointwise("sub", SubFn{}, a, b);
  if (needs_grad({a, b}))
    record_backward("SubBackward", {a, b}, y,
                    [a = a.shape(), b = b.shape(), need_a = a.requires_grad(),
                     need_b = b.requires_grad()](const Tensor& gy) -> Grads {
                      // Reduce before negating: when b was broadcast, its gradient is the
                      // smaller tensor.
                      return {need_a ? sum_to_shape(gy, a) : Tensor(),
                              need_b ? neg(sum_to_shape(gy, b)) : Tensor()};
                    });
  return y;
}

Tensor sub(const Tensor& a, double s) {
  check_same_float("sub", {a});
  Tensor y = pointwise("sub", SubScalarFn{s}, a);
  if (needs_grad({a}))
    record_backward("SubScalarBackward", {a}, y, [](const Tensor& gy) { return gy; });
  return y;
}

Tensor sub(double s, const Tensor& a) {
  check_same_float("sub", {a});
  Tensor y = pointwise("sub", RsubScalarFn{s}, a);
  if (needs_grad({a}))  // d(s - a)/da = -1
    record_backward("RsubScalarBackward", {a}, y, [](const Tensor& gy) { return neg(gy); });
  return y;
}

Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator-(const Tensor& a, double s) {
  return sub(a, s);
}
Tensor operator-(double s, const Tensor& a) {
  return sub(s, a);
}

}  // namespace rg
