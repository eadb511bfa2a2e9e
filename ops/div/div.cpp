#include "ops/div/div.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/div/div_functors.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace {

class DivBackward : public Node {
 public:
  // y (the output) is saved only when b needs a gradient.
  DivBackward(Tensor y, Tensor b, Shape a_shape, bool need_a)
      : y_(std::move(y)), b_(std::move(b)), a_shape_(std::move(a_shape)), need_a_(need_a) {}
  std::string name() const override { return "DivBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    Tensor ga, gb;
    if (need_a_) ga = sum_to_shape(pointwise("div_backward", DivFn{}, g[0], b_), a_shape_);
    if (y_.defined())
      gb = sum_to_shape(pointwise("div_backward", DivGradOtherFn{}, g[0], y_, b_), b_.shape());
    return {ga, gb};
  }
  void release_saved() override {
    y_ = Tensor();
    b_ = Tensor();
  }

 private:
  Tensor y_, b_;
  Shape a_shape_;
  bool need_a_;
};

class DivScalarBackward : public Node {
 public:
  explicit DivScalarBackward(double s) : s_(s) {}
  std::string name() const override { return "DivScalarBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("div_backward", DivScalarFn{s_}, g[0])};
  }

 private:
  double s_;
};

class RdivScalarBackward : public Node {
 public:
  RdivScalarBackward(double s, Tensor a) : s_(s), a_(std::move(a)) {}
  std::string name() const override { return "RdivScalarBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("div_backward", RdivGradFn{s_}, g[0], a_)};
  }
  void release_saved() override { a_ = Tensor(); }

 private:
  double s_;
  Tensor a_;
};

}  // namespace

Tensor div(const Tensor& a_in, const Tensor& b_in) {
  const auto cast = autocast_inputs(AutocastPolicy::promote, a_in, b_in);
  const Tensor &a = cast[0], &b = cast[1];
  check_same_float("div", {a, b});
  Tensor y = pointwise("div", DivFn{}, a, b);
  if (needs_grad({a, b}))
    record(std::make_shared<DivBackward>(b.requires_grad() ? saved(y) : Tensor(), saved(b),
                                         a.shape(), a.requires_grad()),
           {a, b}, {&y});
  return y;
}

Tensor div(const Tensor& a, double s) {
  check_same_float("div", {a});
  Tensor y = pointwise("div", DivScalarFn{s}, a);
  if (needs_grad({a})) record(std::make_shared<DivScalarBackward>(s), {a}, {&y});
  return y;
}

Tensor div(double s, const Tensor& a) {
  check_same_float("div", {a});
  Tensor y = pointwise("div", RdivScalarFn{s}, a);
  if (needs_grad({a})) record(std::make_shared<RdivScalarBackward>(s, saved(a)), {a}, {&y});
  return y;
}

Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor operator/(const Tensor& a, double s) {
  return div(a, s);
}
Tensor operator/(double s, const Tensor& a) {
  return div(s, a);
}

}  // namespace rg
