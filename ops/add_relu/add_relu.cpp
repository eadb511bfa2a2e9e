#include "ops/add_relu/add_relu.h"

#include "core/autograd.h"
#include "ops/add_relu/add_relu_functors.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/relu/relu_functors.h"

namespace rg {

Tensor add_relu(const Tensor& a_in, const Tensor& b_in) {
  const auto cast = autocast_inputs(AutocastPolicy::promote, a_in, b_in);
  const Tensor &a = cast[0], &b = cast[1];
  check_same_float("add_relu", {a, b});
  Tensor y = pointwise("add_relu", AddReluFn{}, a, b);
  if (needs_grad({a, b}))
    record_backward("AddReluBackward", {a, b}, y,
                    [y = saved(y), a = a.shape(), b = b.shape()](const Tensor& gy) -> Grads {
                      const Tensor gs = pointwise("add_relu_backward", ReluGradFn{}, gy, y);
                      return {sum_to_shape(gs, a), sum_to_shape(gs, b)};
                    });
  return y;
}

}  // namespace rg
