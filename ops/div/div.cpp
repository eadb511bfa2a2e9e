#include "ops/div/div.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/div/div_functors.h"
#include "ops/elementwise/elementwise.h"

namespace rg {

Tensor div(const Tensor& a_in, const Tensor& b_in) {
  const auto cast = autocast_inputs(AutocastPolicy::promote, a_in, b_in);
  const Tensor &a = cast[0], &b = cast[1];
  check_same_float("div", {a, b});
  Tensor y = pointwise("div", DivFn{}, a, b);
  // y (the output) is saved only when b needs a gradient.
  if (needs_grad({a, b}))
    record_backward("DivBackward", {a, b}, y,
                    [y = b.requires_grad() ? saved(y) : Tensor(), b = saved(b), a_shape = a.shape(),
                     need_a = a.requires_grad()](const Tensor& gy) -> Grads {
                      Tensor ga, gb;
                      if (need_a)
                        ga = sum_to_shape(pointwise("div_backward", DivFn{}, gy, b), a_shape);
                      if (y.defined())
                        gb = sum_to_shape(pointwise("div_backward", DivGradOtherFn{}, gy, y, b),
                                          b.shape());
                      return {ga, gb};
                    });
  return y;
}

Tensor div(const Tensor& a, double s) {
  check_same_float("div", {a});
  Tensor y = pointwise("div", DivScalarFn{s}, a);
  if (needs_grad({a}))
    record_backward("DivScalarBackward", {a}, y, [s](const Tensor& gy) {
      return pointwise("div_backward", DivScalarFn{s}, gy);
    });
  return y;
}

Tensor div(double s, const Tensor& a) {
  check_same_float("div", {a});
  Tensor y = pointwise("div", RdivScalarFn{s}, a);
  if (needs_grad({a}))
    record_backward("RdivScalarBackward", {a}, y, [s, a = saved(a)](const Tensor& gy) {
      return pointwise("div_backward", RdivGradFn{s}, gy, a);
    });
  return y;
}

Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor operator/(const Tensor& a, double s) {
  return div(a, s);
}
Tensor operator/(double s, const Tensor& a) {
  return div(s, a);
}

}  // namespace rg
