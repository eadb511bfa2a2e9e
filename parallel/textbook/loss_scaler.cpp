// Lesson 5: mixed precision and the loss scaler (docs/learn/5-mixed-precision.md). f16 keeps
// 11 significant bits and numbers from 2⁻²⁴ to 65504: gradients of 1e-8 flush to zero. So the
// loss is multiplied by S before backward — every gradient is then S times larger, lifted into
// range — and divided by S again before the optimizer sees it. S is a power of two, so both
// multiplications are exact.
//
// S too large makes some gradient overflow to inf. Dynamic scaling finds a good S: an inf or
// NaN in any gradient means this step is skipped and S halves; after growth_interval clean
// steps in a row S doubles, in case a larger one fits now.
#include <cmath>

#include "core/autograd.h"
#include "ops/ops.h"
#include "parallel/textbook/textbook.h"

namespace rg::textbook {

namespace {

class DynamicScaler : public LossScaler {
 public:
  DynamicScaler(double init_scale, int growth_interval)
      : scale_(init_scale), growth_interval_(growth_interval) {}

  Tensor scale(const Tensor& loss) override { return loss.to(DType::f32) * scale_; }

  bool unscale(const std::vector<Tensor>& params) override {
    bool found_inf = false;
    NoGradGuard no_grad;
    for (const Tensor& p : params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      copy_strided(g, g * (1.0 / scale_));  // exact: a power of two
      for (double v : g.to_vector<double>()) found_inf |= !std::isfinite(v);
    }
    return found_inf;
  }

  void update(bool found_inf) override {
    if (found_inf) {
      scale_ = std::max(scale_ * 0.5, 1.0);  // back off; never below 1
      good_steps_ = 0;
    } else if (++good_steps_ == growth_interval_) {
      scale_ = std::min(scale_ * 2.0, 16777216.0);  // grow, up to 2^24
      good_steps_ = 0;
    }
  }

  double scale_value() const override { return scale_; }

 private:
  double scale_;
  int growth_interval_;
  int good_steps_ = 0;  // clean steps since the last change
};

}  // namespace

std::unique_ptr<LossScaler> loss_scaler(double init_scale, int growth_interval) {
  return std::make_unique<DynamicScaler>(init_scale, growth_interval);
}

}  // namespace rg::textbook
