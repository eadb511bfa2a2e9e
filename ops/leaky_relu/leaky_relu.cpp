#include "ops/leaky_relu/leaky_relu.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/leaky_relu/leaky_relu_functors.h"

namespace rg {

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  check_same_float("leaky_relu", {x});
  Tensor y = pointwise("leaky_relu", LeakyReluFn{negative_slope}, x);
  if (needs_grad({x}))
    record_backward("LeakyReluBackward", {x}, y, [x = saved(x), negative_slope](const Tensor& gy) {
      return pointwise("leaky_relu_backward", LeakyReluGradFn{negative_slope}, gy, x);
    });
  return y;
}

}  // namespace rg
