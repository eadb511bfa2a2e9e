#include "ops/mul/mul.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/mul/mul_functors.h"

namespace rg {
namespace {

class MulBackward : public Node {
 public:
  // a is saved (defined) only when b needs a gradient, b only when a does.
  MulBackward(Tensor a, Tensor b, Shape a_shape, Shape b_shape)
      : a_(std::move(a)),
        b_(std::move(b)),
        a_shape_(std::move(a_shape)),
        b_shape_(std::move(b_shape)) {}
  std::string name() const override { return "MulBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    Tensor ga, gb;
    if (b_.defined()) ga = sum_to_shape(pointwise("mul_backward", MulFn{}, g[0], b_), a_shape_);
    if (a_.defined()) gb = sum_to_shape(pointwise("mul_backward", MulFn{}, g[0], a_), b_shape_);
    return {ga, gb};
  }
  void release_saved() override {
    a_ = Tensor();
    b_ = Tensor();
  }

 private:
  Tensor a_, b_;
  Shape a_shape_, b_shape_;
};

class MulScalarBackward : public Node {
 public:
  explicit MulScalarBackward(double s) : s_(s) {}
  std::string name() const override { return "MulScalarBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("mul_backward", MulScalarFn{s_}, g[0])};
  }

 private:
  double s_;
};

}  // namespace

Tensor mul(const Tensor& a_in, const Tensor& b_in) {
  const auto cast = autocast_inputs(AutocastPolicy::promote, a_in, b_in);
  const Tensor &a = cast[0], &b = cast[1];
  check_same_float("mul", {a, b});
  Tensor y = pointwise("mul", MulFn{}, a, b);
  if (needs_grad({a, b}))
    record(std::make_shared<MulBackward>(b.requires_grad() ? saved(a) : Tensor(),
                                         a.requires_grad() ? saved(b) : Tensor(), a.shape(),
                                         b.shape()),
           {a, b}, {&y});
  return y;
}

Tensor mul(const Tensor& a, double s) {
  check_same_float("mul", {a});
  Tensor y = pointwise("mul", MulScalarFn{s}, a);
  if (needs_grad({a})) record(std::make_shared<MulScalarBackward>(s), {a}, {&y});
  return y;
}

Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator*(const Tensor& a, double s) {
  return mul(a, s);
}
Tensor operator*(double s, const Tensor& a) {
  return mul(a, s);
}

}  // namespace rg
