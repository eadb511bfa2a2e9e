#include "ops/template_op/template_op.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/template_op/template_op_functors.h"

namespace rg {

Tensor template_op(const Tensor& x) {
  check_same_float("template_op", {x});
  // pointwise() picks the device's kernel (core/dispatch.h): the CPU loop or the CUDA kernel.
  Tensor y = pointwise("template_op", TemplateOpFn{}, x);
  if (needs_grad({x}))
    record_backward("TemplateOpBackward", {x}, y, [x = saved(x)](const Tensor& gy) {
      return pointwise("template_op_backward", TemplateOpGradFn{}, gy, x);
    });
  return y;
}

}  // namespace rg
