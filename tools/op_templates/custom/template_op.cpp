#include "ops/template_op/template_op.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/elementwise/elementwise.h"
#include "ops/template_op/template_op_cuda.h"
#include "ops/template_op/template_op_kernel.h"

namespace rg {
namespace {

Tensor template_op_forward(OnCpu, const Tensor& x) {
  Tensor y = empty(x.shape(), {x.dtype(), x.device()});
  template_op_forward_cpu(y, x);
  return y;
}

Tensor template_op_backward(OnCpu, const Tensor& gy, const Tensor& x) {
  Tensor gx = empty(x.shape(), {x.dtype(), x.device()});
  template_op_backward_cpu(gx, gy, x);
  return gx;
}

}  // namespace

Tensor template_op(const Tensor& x) {
  check_same_float("template_op", {x});
  // The kernels read contiguous memory: a strided input is copied once, here.
  const Tensor xc = x.contiguous();
  Tensor y = dispatch_device<Kernels::cpu_and_cuda>(
      "template_op", x.device(), [&](auto on) { return template_op_forward(on, xc); });
  if (needs_grad({x}))
    record_backward("TemplateOpBackward", {x}, y, [xc = saved(xc)](const Tensor& g) {
      check_same_float("template_op_backward", {g, xc});
      const Tensor gy = g.contiguous();
      return dispatch_device<Kernels::cpu_and_cuda>(
          "template_op_backward", xc.device(),
          [&](auto on) { return template_op_backward(on, gy, xc); });
    });
  return y;
}

}  // namespace rg
