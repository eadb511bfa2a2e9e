#include "ops/pow/pow.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/pow/pow_functors.h"

namespace rg {

Tensor pow(const Tensor& x, double exponent) {
  check_same_float("pow", {x});
  Tensor y = pointwise("pow", PowScalarFn{exponent}, x);
  if (needs_grad({x}))
    record_backward("PowScalarBackward", {x}, y, [x = saved(x), exponent](const Tensor& gy) {
      return pointwise("pow_backward", PowScalarGradFn{exponent}, gy, x);
    });
  return y;
}

Tensor pow(const Tensor& x, const Tensor& exponent) {
  check_same_float("pow", {x, exponent});
  Tensor y = pointwise("pow", PowFn{}, x, exponent);
  // The exponent is saved only when x needs a gradient, y only when the exponent does.
  if (needs_grad({x, exponent}))
    record_backward(
        "PowBackward", {x, exponent}, y,
        [x = saved(x), e = x.requires_grad() ? saved(exponent) : Tensor(),
         y = exponent.requires_grad() ? saved(y) : Tensor(),
         e_shape = exponent.shape()](const Tensor& gy) -> Grads {
          Tensor gx, ge;
          if (e.defined())
            gx = sum_to_shape(pointwise("pow_backward", PowGradBaseFn{}, gy, x, e), x.shape());
          if (y.defined())
            ge = sum_to_shape(pointwise("pow_backward", PowGradExponentFn{}, gy, x, y), e_shape);
          return {gx, ge};
        });
  return y;
}

Tensor pow(double base, const Tensor& exponent) {
  check_same_float("pow", {exponent});
  Tensor y = pointwise("pow", RpowScalarFn{base}, exponent);
  if (needs_grad({exponent}))
    record_backward("RpowScalarBackward", {exponent}, y, [base, y = saved(y)](const Tensor& gy) {
      return pointwise("pow_backward", RpowGradFn{base}, gy, y);
    });
  return y;
}

}  // namespace rg
