#include "ops/sub/sub.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/neg/neg.h"
#include "ops/sub/sub_functors.h"

namespace rg {
namespace {

class SubBackward : public Node {
 public:
  SubBackward(Shape a, Shape b, bool need_a, bool need_b)
      : a_(std::move(a)), b_(std::move(b)), need_a_(need_a), need_b_(need_b) {}
  std::string name() const override { return "SubBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    // Reduce before negating: when b was broadcast, its gradient is the smaller tensor.
    return {need_a_ ? sum_to_shape(g[0], a_) : Tensor(),
            need_b_ ? neg(sum_to_shape(g[0], b_)) : Tensor()};
  }

 private:
  Shape a_, b_;
  bool need_a_, need_b_;
};

// d(a - s)/da = 1, d(s - a)/da = -1.
class SubScalarBackward : public Node {
 public:
  explicit SubScalarBackward(bool negate) : negate_(negate) {}
  std::string name() const override { return negate_ ? "RsubScalarBackward" : "SubScalarBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {negate_ ? neg(g[0]) : g[0]};
  }

 private:
  bool negate_;
};

}  // namespace

Tensor sub(const Tensor& a_in, const Tensor& b_in) {
  const auto cast = autocast_inputs(AutocastPolicy::promote, a_in, b_in);
  const Tensor &a = cast[0], &b = cast[1];
  check_same_float("sub", {a, b});
  Tensor y = pointwise("sub", SubFn{}, a, b);
  if (needs_grad({a, b}))
    record(
        std::make_shared<SubBackward>(a.shape(), b.shape(), a.requires_grad(), b.requires_grad()),
        {a, b}, {&y});
  return y;
}

Tensor sub(const Tensor& a, double s) {
  check_same_float("sub", {a});
  Tensor y = pointwise("sub", SubScalarFn{s}, a);
  if (needs_grad({a})) record(std::make_shared<SubScalarBackward>(false), {a}, {&y});
  return y;
}

Tensor sub(double s, const Tensor& a) {
  check_same_float("sub", {a});
  Tensor y = pointwise("sub", RsubScalarFn{s}, a);
  if (needs_grad({a})) record(std::make_shared<SubScalarBackward>(true), {a}, {&y});
  return y;
}

Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator-(const Tensor& a, double s) {
  return sub(a, s);
}
Tensor operator-(double s, const Tensor& a) {
  return sub(s, a);
}

}  // namespace rg
