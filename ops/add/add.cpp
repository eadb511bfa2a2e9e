#include "ops/add/add.h"

#include "core/autograd.h"
#include "ops/add/add_functors.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"

namespace rg {

Tensor add(const Tensor& a_in, const Tensor& b_in) {
  const auto cast = autocast_inputs(AutocastPolicy::promote, a_in, b_in);
  const Tensor &a = cast[0], &b = cast[1];
  check_same_float("add", {a, b});
  Tensor y = pointwise("add", AddFn{}, a, b);
  if (needs_grad({a, b}))
    record_backward("AddBackward", {a, b}, y,
                    [a = a.shape(), b = b.shape()](const Tensor& gy) -> Grads {
                      return {sum_to_shape(gy, a), sum_to_shape(gy, b)};
                    });
  return y;
}

Tensor add(const Tensor& a, double s) {
  check_same_float("add", {a});
  Tensor y = pointwise("add", AddScalarFn{s}, a);
  if (needs_grad({a}))
    record_backward("AddScalarBackward", {a}, y, [](const Tensor& gy) { return gy; });
  return y;
}

Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator+(const Tensor& a, double s) {
  return add(a, s);
}
Tensor operator+(double s, const Tensor& a) {
  return add(a, s);
}

}  // namespace rg
