#include "ops/template_op/template_op.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/error.h"
#include "ops/elementwise/elementwise.h"
#include "ops/template_op/template_op_cuda.h"
#include "ops/template_op/template_op_kernel.h"

namespace rg {
namespace {

Tensor template_op_forward(OnCpu, const Tensor& x, int64_t rows, int64_t cols) {
  const Shape& s = x.shape();
  Tensor y = empty(Shape(s.begin(), s.end() - 1), {x.dtype(), x.device()});
  template_op_forward_cpu(y, x, rows, cols);
  return y;
}

Tensor template_op_backward(OnCpu, const Tensor& gy, const Tensor& x, int64_t rows, int64_t cols) {
  Tensor gx = empty(x.shape(), {x.dtype(), x.device()});
  template_op_backward_cpu(gx, gy, x, rows, cols);
  return gx;
}

}  // namespace

Tensor template_op(const Tensor& x) {
  check_same_float("template_op", {x});
  if (x.dim() == 0) fail("template_op: x must have a dim to sum over, got ", x.describe());
  // The kernels read contiguous rows: a strided input is copied once, here.
  const Tensor xc = x.contiguous();
  const int64_t cols = x.shape().back(), rows = cols == 0 ? 0 : x.numel() / cols;
  Tensor y = dispatch_device<Kernels::cpu_and_cuda>(
      "template_op", x.device(), [&](auto on) { return template_op_forward(on, xc, rows, cols); });
  if (needs_grad({x}))
    record_backward("TemplateOpBackward", {x}, y, [xc = saved(xc), rows, cols](const Tensor& g) {
      check_same_float("template_op_backward", {g, xc});
      const Tensor gy = g.contiguous();
      return dispatch_device<Kernels::cpu_and_cuda>(
          "template_op_backward", xc.device(),
          [&](auto on) { return template_op_backward(on, gy, xc, rows, cols); });
    });
  return y;
}

}  // namespace rg
