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
  // A channels-last input runs on the NHWC kernels and gives channels-last results; any other
  // layout is made NCHW.
  const MemoryFormat format = x.suggest_memory_format() == MemoryFormat::channels_last
                                  ? MemoryFormat::channels_last
                                  : MemoryFormat::contiguous;
  const bool nhwc = format == MemoryFormat::channels_last;
  const Tensor xc = x.detach().contiguous(format);
  MaxPool2dResult r;
  r.output = empty({g.n, g.c, g.oh, g.ow}, {x.dtype(), x.device()}, format);
  r.indices = empty({g.n, g.c, g.oh, g.ow}, {DType::i64, x.device()}, format);
  dispatch_device<Kernels::cpu_and_cuda>("max_pool2d", x.device(), [&](auto on) {
    if (nhwc) return detail::max_pool2d_forward_nhwc(on, xc, g, r.output, r.indices);
    detail::max_pool2d_forward(on, xc, g, r.output, r.indices);
  });
  // The GPU's backward walks the windows (g) over each input element.
  if (needs_grad({x}))
    record_backward("MaxPool2dBackward", {x}, r.output,
                    [indices = saved(r.indices), g, nhwc, format](const Tensor& grad) {
                      const Tensor gy = grad.contiguous(format);
                      return dispatch_device<Kernels::cpu_and_cuda>(
                          "max_pool2d_backward", gy.device(), [&](auto on) {
                            return nhwc ? detail::max_pool2d_backward_nhwc(on, gy, indices, g)
                                        : detail::max_pool2d_backward(on, gy, indices, g);
                          });
                    });
  return r;
}

}  // namespace rg
