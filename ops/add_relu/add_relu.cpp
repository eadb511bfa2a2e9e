#include "ops/add_relu/add_relu.h"

#include "core/autograd.h"
#include "ops/add_relu/add_relu_functors.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/relu/relu_functors.h"

namespace rg {
namespace {

class AddReluBackward : public Node {
 public:
  AddReluBackward(Tensor y, Shape a, Shape b)
      : y_(std::move(y)), a_(std::move(a)), b_(std::move(b)) {}
  std::string name() const override { return "AddReluBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gs = pointwise("add_relu_backward", ReluGradFn{}, g[0], y_);
    return {sum_to_shape(gs, a_), sum_to_shape(gs, b_)};
  }
  void release_saved() override { y_ = Tensor(); }

 private:
  Tensor y_;
  Shape a_, b_;
};

}  // namespace

Tensor add_relu(const Tensor& a_in, const Tensor& b_in) {
  const auto cast = autocast_inputs(AutocastPolicy::promote, a_in, b_in);
  const Tensor &a = cast[0], &b = cast[1];
  check_same_float("add_relu", {a, b});
  Tensor y = pointwise("add_relu", AddReluFn{}, a, b);
  if (needs_grad({a, b}))
    record(std::make_shared<AddReluBackward>(saved(y), a.shape(), b.shape()), {a, b}, {&y});
  return y;
}

}  // namespace rg
