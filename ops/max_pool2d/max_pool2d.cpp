#include "ops/max_pool2d/max_pool2d.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/elementwise/elementwise.h"
#include "ops/max_pool2d/max_pool2d_kernel.h"

namespace rg {

MaxPool2dResult max_pool2d(const Tensor& x, Pool2dSize kernel_size, Pool2dSize stride,
                           Pool2dSize padding, Pool2dSize dilation, CeilMode ceil_mode) {
  check_same_float("max_pool2d", {x});
  const Pool2dGeometry g =
      pool2d_geometry("max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode);
  const Tensor xc = x.detach().contiguous();
  MaxPool2dResult r;
  r.output = empty({g.n, g.c, g.oh, g.ow}, {x.dtype(), x.device()});
  r.indices = empty({g.n, g.c, g.oh, g.ow}, {DType::i64, x.device()});
  dispatch_device<Kernels::cpu_and_cuda>("max_pool2d", x.device(), [&](auto on) {
    detail::max_pool2d_forward(on, xc, g, r.output, r.indices);
  });
  // The GPU's backward walks the windows (g) over each input element.
  if (needs_grad({x}))
    record_backward("MaxPool2dBackward", {x}, r.output,
                    [indices = saved(r.indices), g](const Tensor& grad) {
                      const Tensor gy = grad.contiguous();
                      return dispatch_device<Kernels::cpu_and_cuda>(
                          "max_pool2d_backward", gy.device(),
                          [&](auto on) { return detail::max_pool2d_backward(on, gy, indices, g); });
                    });
  return r;
}

}  // namespace rg
