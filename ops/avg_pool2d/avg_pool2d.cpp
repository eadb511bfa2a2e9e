#include "ops/avg_pool2d/avg_pool2d.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/avg_pool2d/avg_pool2d_kernel.h"
#include "ops/elementwise/elementwise.h"

namespace rg {

Tensor avg_pool2d(const Tensor& x, Pool2dSize kernel_size, Pool2dSize stride, Pool2dSize padding,
                  CeilMode ceil_mode, CountIncludePad count_include_pad) {
  check_same_float("avg_pool2d", {x});
  const Pool2dGeometry g =
      pool2d_geometry("avg_pool2d", x, kernel_size, stride, padding, 1, ceil_mode);
  Tensor y = empty({g.n, g.c, g.oh, g.ow}, {x.dtype(), x.device()});
  const Tensor xc = x.detach().contiguous();
  dispatch_device<Kernels::cpu_and_cuda>("avg_pool2d", x.device(), [&](auto on) {
    detail::avg_pool2d_forward(on, xc, g, count_include_pad, y);
  });
  if (needs_grad({x}))
    record_backward("AvgPool2dBackward", {x}, y, [g, count_include_pad](const Tensor& grad) {
      const Tensor gy = grad.contiguous();
      return dispatch_device<Kernels::cpu_and_cuda>(
          "avg_pool2d_backward", gy.device(),
          [&](auto on) { return detail::avg_pool2d_backward(on, gy, g, count_include_pad); });
    });
  return y;
}

}  // namespace rg
