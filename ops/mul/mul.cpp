#include "ops/mul/mul.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/mul/mul_functors.h"

namespace rg {

Tensor mul(const Tensor& a_in, const Tensor& b_in) {
  const auto cast = autocast_inputs(AutocastPolicy::promote, a_in, b_in);
  const Tensor &a = cast[0], &b = cast[1];
  check_same_float("mul", {a, b});
  Tensor y = pointwise("mul", MulFn{}, a, b);
  // a is saved only when b needs a gradient, b only when a does.
  if (needs_grad({a, b}))
    record_backward(
        "MulBackward", {a, b}, y,
        [a = b.requires_grad() ? saved(a) : Tensor(), b = a.requires_grad() ? saved(b) : Tensor(),
         a_shape = a.shape(), b_shape = b.shape()](const Tensor& gy) -> Grads {
          Tensor ga, gb;
          if (b.defined()) ga = sum_to_shape(pointwise("mul_backward", MulFn{}, gy, b), a_shape);
          if (a.defined()) gb = sum_to_shape(pointwise("mul_backward", MulFn{}, gy, a), b_shape);
          return {ga, gb};
        });
  return y;
}

Tensor mul(const Tensor& a, double s) {
  check_same_float("mul", {a});
  Tensor y = pointwise("mul", MulScalarFn{s}, a);
  if (needs_grad({a}))
    record_backward("MulScalarBackward", {a}, y, [s](const Tensor& gy) {
      return pointwise("mul_backward", MulScalarFn{s}, gy);
    });
  return y;
}

Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator*(const Tensor& a, double s) {
  return mul(a, s);
}
Tensor operator*(double s, const Tensor& a) {
  return mul(a, s);
}

}  // namespace rg
