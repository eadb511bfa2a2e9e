#include "ops/mean/mean.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/sum/sum_kernel.h"

namespace rg {
namespace {

class MeanBackward : public Node {
 public:
  MeanBackward(detail::ReducePlan plan, double scale) : plan_(std::move(plan)), scale_(scale) {}
  std::string name() const override { return "MeanBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {detail::sum_backward(g[0], plan_, scale_)};
  }

 private:
  detail::ReducePlan plan_;
  double scale_;
};

Tensor mean_impl(const Tensor& x_in, const std::vector<int64_t>& dims, bool all, KeepDim keepdim) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, x_in);
  const Tensor& x = cast[0];
  check_same_float("mean", {x});
  detail::ReducePlan plan = detail::plan_reduce(x.shape(), dims, all, keepdim, "mean");
  // Scaling the double sum once (not each term) keeps the mean as accurate as the sum.
  const double scale = 1.0 / static_cast<double>(plan.count);
  Tensor y = detail::sum_reduce("mean", x, plan, scale);
  if (needs_grad({x})) record(std::make_shared<MeanBackward>(std::move(plan), scale), {x}, {&y});
  return y;
}

}  // namespace

Tensor mean(const Tensor& x) {
  return mean_impl(x, {}, true, KeepDim::no);
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, KeepDim keepdim) {
  return mean_impl(x, dims, false, keepdim);
}

}  // namespace rg
