#include "ops/softmax/softmax.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/softmax/softmax_kernel.h"

namespace rg {

Tensor detail::softmax_forward(const Tensor& x, int64_t dim, SoftmaxKind kind) {
  const char* op = kind == SoftmaxKind::softmax ? "softmax" : "log_softmax";
  return dispatch_device<Kernels::cpu_and_cuda>(
      op, x.device(), [&](auto on) { return softmax_forward(on, x, dim, kind); });
}

Tensor detail::softmax_backward(const Tensor& gy, const Tensor& y, int64_t dim, SoftmaxKind kind) {
  const char* op = kind == SoftmaxKind::softmax ? "softmax_backward" : "log_softmax_backward";
  check_same_float(op, {gy, y});
  return dispatch_device<Kernels::cpu_and_cuda>(
      op, y.device(), [&](auto on) { return softmax_backward(on, gy, y, dim, kind); });
}

Tensor softmax(const Tensor& x_in, int64_t dim) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, x_in);
  const Tensor& x = cast[0];
  check_same_float("softmax", {x});
  dim = normalize_dim(dim, x.dim(), "softmax");
  Tensor y = detail::softmax_forward(x, dim, detail::SoftmaxKind::softmax);
  if (needs_grad({x}))
    record_backward("SoftmaxBackward", {x}, y, [y = saved(y), dim](const Tensor& gy) {
      return detail::softmax_backward(gy, y, dim, detail::SoftmaxKind::softmax);
    });
  return y;
}

}  // namespace rg
