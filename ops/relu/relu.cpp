#include "ops/relu/relu.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/relu/relu_functors.h"

namespace rg {

Tensor relu(const Tensor& x) {
  check_same_float("relu", {x});
  Tensor y = pointwise("relu", ReluFn{}, x);
  if (needs_grad({x}))
    record_backward("ReluBackward", {x}, y, [y = saved(y)](const Tensor& gy) {
      return pointwise("relu_backward", ReluGradFn{}, gy, y);
    });
  return y;
}

}  // namespace rg
