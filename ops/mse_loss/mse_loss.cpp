#include "ops/mse_loss/mse_loss.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/mean/mean.h"
#include "ops/mse_loss/mse_loss_functors.h"
#include "ops/sum/sum.h"

namespace rg {
namespace {

class MseLossBackward : public Node {
 public:
  MseLossBackward(Tensor x, Tensor y, double scale)
      : x_(std::move(x)), y_(std::move(y)), scale_(scale) {}
  std::string name() const override { return "MseLossBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    Tensor gx, gy;
    if (next_edges[0].node)
      gx = pointwise("mse_loss_backward", SquaredErrorGradFn{scale_}, g[0], x_, y_);
    if (next_edges[1].node)
      gy = pointwise("mse_loss_backward", SquaredErrorGradFn{-scale_}, g[0], x_, y_);
    return {gx, gy};
  }
  void release_saved() override { x_ = y_ = Tensor(); }

 private:
  Tensor x_, y_;
  double scale_;
};

}  // namespace

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
    record(std::make_shared<MseLossBackward>(saved(x), saved(y), scale), {x, y}, {&out});
  return out;
}

}  // namespace rg
