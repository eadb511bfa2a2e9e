#include "ops/silu/silu.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/silu/silu_functors.h"

namespace rg {

Tensor silu(const Tensor& x) {
  check_same_float("silu", {x});
  // pointwise() picks the device's kernel (core/dispatch.h): the CPU loop or the CUDA kernel.
  Tensor y = pointwise("silu", SiluFn{}, x);
  if (needs_grad({x}))
    record_backward("SiluBackward", {x}, y, [x = saved(x)](const Tensor& gy) {
      return pointwise("silu_backward", SiluGradFn{}, gy, x);
    });
  return y;
}

}  // namespace rg
