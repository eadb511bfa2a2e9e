#include "ops/mean/mean.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/sum/sum_kernel.h"

namespace rg {
namespace {

Tensor mean_impl(const Tensor& x_in, const std::vector<int64_t>& dims, bool all, KeepDim keepdim) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, x_in);
  const Tensor& x = cast[0];
  check_same_float("mean", {x});
  detail::ReducePlan plan = detail::plan_reduce(x.shape(), dims, all, keepdim, "mean");
  // Scaling the double sum once (not each term) keeps the mean as accurate as the sum.
  const double scale = 1.0 / static_cast<double>(plan.count);
  Tensor y = detail::sum_reduce("mean", x, plan, scale);
  if (needs_grad({x}))
    record_backward("MeanBackward", {x}, y, [plan = std::move(plan), scale](const Tensor& gy) {
      return detail::sum_backward(gy, plan, scale);
    });
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
