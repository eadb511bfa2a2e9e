#include "ops/tanh/tanh.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/tanh/tanh_functors.h"

namespace rg {

Tensor tanh(const Tensor& x) {
  check_same_float("tanh", {x});
  Tensor y = pointwise("tanh", TanhFn{}, x);
  if (needs_grad({x}))
    record_backward("TanhBackward", {x}, y, [y = saved(y)](const Tensor& gy) {
      return pointwise("tanh_backward", TanhGradFn{}, gy, y);
    });
  return y;
}

}  // namespace rg
