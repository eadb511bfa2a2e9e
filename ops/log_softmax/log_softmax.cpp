#include "ops/log_softmax/log_softmax.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/softmax/softmax_kernel.h"

namespace rg {

Tensor log_softmax(const Tensor& x_in, int64_t dim) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, x_in);
  const Tensor& x = cast[0];
  check_same_float("log_softmax", {x});
  dim = normalize_dim(dim, x.dim(), "log_softmax");
  Tensor y = detail::softmax_forward(x, dim, detail::SoftmaxKind::log_softmax);
  if (needs_grad({x}))
    record_backward("LogSoftmaxBackward", {x}, y, [y = saved(y), dim](const Tensor& gy) {
      return detail::softmax_backward(gy, y, dim, detail::SoftmaxKind::log_softmax);
    });
  return y;
}

}  // namespace rg
