#include "ops/adaptive_avg_pool2d/adaptive_avg_pool2d.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/adaptive_avg_pool2d/adaptive_avg_pool2d_kernel.h"
#include "ops/elementwise/elementwise.h"

namespace rg {

Tensor adaptive_avg_pool2d(const Tensor& x, Pool2dSize output_size) {
  check_same_float("adaptive_avg_pool2d", {x});
  RG_CHECK(x.dim() == 4, "adaptive_avg_pool2d: expected a 4-D input (N, C, H, W), got ",
           x.describe());
  RG_CHECK(x.size(2) > 0 && x.size(3) > 0,
           "adaptive_avg_pool2d: expected non-empty spatial dims (H, W), got ", x.describe());
  RG_CHECK(output_size.h > 0 && output_size.w > 0,
           "adaptive_avg_pool2d: output_size must be positive, got ", output_size, " for input ",
           x.describe());
  Tensor y = empty({x.size(0), x.size(1), output_size.h, output_size.w}, {x.dtype(), x.device()});
  const Tensor xc = x.detach().contiguous();
  dispatch_device<Kernels::cpu_and_cuda>("adaptive_avg_pool2d", x.device(), [&](auto on) {
    detail::adaptive_avg_pool2d_forward(on, xc, y);
  });
  if (needs_grad({x}))
    record_backward("AdaptiveAvgPool2dBackward", {x}, y, [shape = x.shape()](const Tensor& g) {
      const Tensor gy = g.contiguous();
      return dispatch_device<Kernels::cpu_and_cuda>(
          "adaptive_avg_pool2d_backward", gy.device(),
          [&](auto on) { return detail::adaptive_avg_pool2d_backward(on, gy, shape); });
    });
  return y;
}

}  // namespace rg
