#include "ops/add/add.h"

#include "core/autograd.h"
#include "ops/add/add_functors.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace {

class AddBackward : public Node {
 public:
  AddBackward(Shape a, Shape b) : a_(std::move(a)), b_(std::move(b)) {}
  std::string name() const override { return "AddBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {sum_to_shape(g[0], a_), sum_to_shape(g[0], b_)};
  }

 private:
  Shape a_, b_;
};

class AddScalarBackward : public Node {
 public:
  std::string name() const override { return "AddScalarBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override { return {g[0]}; }
};

}  // namespace

Tensor add(const Tensor& a_in, const Tensor& b_in) {
  const auto cast = autocast_inputs(AutocastPolicy::promote, a_in, b_in);
  const Tensor &a = cast[0], &b = cast[1];
  check_same_float("add", {a, b});
  Tensor y = pointwise("add", AddFn{}, a, b);
  if (needs_grad({a, b})) record(std::make_shared<AddBackward>(a.shape(), b.shape()), {a, b}, {&y});
  return y;
}

Tensor add(const Tensor& a, double s) {
  check_same_float("add", {a});
  Tensor y = pointwise("add", AddScalarFn{s}, a);
  if (needs_grad({a})) record(std::make_shared<AddScalarBackward>(), {a}, {&y});
  return y;
}

Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator+(const Tensor& a, double s) {
  return add(a, s);
}
Tensor operator+(double s, const Tensor& a) {
  return add(a, s);
}

}  // namespace rg
