#include "ops/sum/sum.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/sum/sum_kernel.h"

namespace rg {
namespace detail {

ReducePlan plan_reduce(const Shape& shape, const std::vector<int64_t>& dims, bool all,
                       KeepDim keepdim, std::string_view op) {
  const int64_t ndim = static_cast<int64_t>(shape.size());
  ReducePlan plan;
  plan.in_shape = shape;
  plan.reduced.assign(shape.size(), all || dims.empty());
  const std::string name(op);
  for (int64_t d : dims) {
    if (all) break;
    const int64_t w = normalize_dim(d, ndim, name.c_str());
    if (ndim == 0) continue;  // a 0-d tensor accepts dim 0 / -1 and reduces its one element
    RG_CHECK(!plan.reduced[w], op, ": dim ", d, " appears more than once in the dims of ",
             shape_str(shape));
    plan.reduced[w] = true;
  }
  for (int64_t d = 0; d < ndim; ++d) {
    if (plan.reduced[d]) {
      plan.count *= shape[d];
      plan.kept_shape.push_back(1);
      if (keepdim == KeepDim::yes) plan.out_shape.push_back(1);
    } else {
      plan.kept_shape.push_back(shape[d]);
      plan.out_shape.push_back(shape[d]);
    }
  }
  return plan;
}

}  // namespace detail

namespace {

Tensor sum_impl(const Tensor& x_in, const std::vector<int64_t>& dims, bool all, KeepDim keepdim) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, x_in);
  const Tensor& x = cast[0];
  check_same_float("sum", {x});
  detail::ReducePlan plan = detail::plan_reduce(x.shape(), dims, all, keepdim, "sum");
  Tensor y = detail::sum_reduce("sum", x, plan, 1.0);
  if (needs_grad({x}))
    record_backward("SumBackward", {x}, y, [plan = std::move(plan)](const Tensor& gy) {
      return detail::sum_backward(gy, plan, 1.0);
    });
  return y;
}

}  // namespace

Tensor sum(const Tensor& x) {
  return sum_impl(x, {}, true, KeepDim::no);
}

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, KeepDim keepdim) {
  return sum_impl(x, dims, false, keepdim);
}

}  // namespace rg
