#include "ops/mse_loss/mse_loss.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/mean/mean.h"
#include "ops/mse_loss/mse_loss_functors.h"
#include "ops/sum/sum.h"

namespace rg {

Tensor mse_loss(const Tensor& x_in, const Tensor& y_in, Reduction reduction) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, x_in, y_in);
  const Tensor &x = cast[0], &y = cast[1];
  check_same_float("mse_loss", {x, y});
  RG_CHECK(x.shape() == y.shape(), "mse_loss: target ", y.describe(),
           " must have the same shape as input ", x.describe());
  Tensor out = pointwise("mse_loss", SquaredErrorFn{}, x, y);
  double scale = 2.0;
  if (reduction == Reduction::sum) out = sum(out);
  if (reduction == Reduction::mean) {
    out = mean(out);
    scale = 2.0 / static_cast<double>(x.numel());
  }
  if (needs_grad({x, y}))
    record_backward("MseLossBackward", {x, y}, out,
                    [x = saved(x), y = saved(y), scale, need_x = x.requires_grad(),
                     need_y = y.requires_grad()](const Tensor& g) -> Grads {
                      Tensor gx, gy;
                      if (need_x)
                        gx = pointwise("mse_loss_backward", SquaredErrorGradFn{scale}, g, x, y);
                      if (need_y)
                        gy = pointwise("mse_loss_backward", SquaredErrorGradFn{-scale}, g, x, y);
                      return {gx, gy};
                    });
  return out;
}

}  // namespace rg
