#include "ops/gelu/gelu.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/gelu/gelu_functors.h"

namespace rg {

Tensor gelu(const Tensor& x) {
  check_same_float("gelu", {x});
  // pointwise() picks the device's kernel (core/dispatch.h): the CPU loop or the CUDA kernel.
  Tensor y = pointwise("gelu", GeluFn{}, x);
  if (needs_grad({x}))
    record_backward("GeluBackward", {x}, y, [x = saved(x)](const Tensor& gy) {
      return pointwise("gelu_backward", GeluGradFn{}, gy, x);
    });
  return y;
}

}  // namespace rg
