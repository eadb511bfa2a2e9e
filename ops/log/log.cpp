#include "ops/log/log.h"

#include "core/autograd.h"
#include "ops/div/div_functors.h"
#include "ops/elementwise/elementwise.h"
#include "ops/log/log_functors.h"

namespace rg {

Tensor log(const Tensor& x) {
  check_same_float("log", {x});
  Tensor y = pointwise("log", LogFn{}, x);
  if (needs_grad({x}))
    record_backward("LogBackward", {x}, y, [x = saved(x)](const Tensor& gy) {
      return pointwise("log_backward", DivFn{}, gy, x);
    });
  return y;
}

}  // namespace rg
