#include "ops/pow/pow.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/pow/pow_functors.h"

namespace rg {
namespace {

class PowScalarBackward : public Node {
 public:
  PowScalarBackward(Tensor x, double e) : x_(std::move(x)), e_(e) {}
  std::string name() const override { return "PowScalarBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("pow_backward", PowScalarGradFn{e_}, g[0], x_)};
  }
  void release_saved() override { x_ = Tensor(); }

 private:
  Tensor x_;
  double e_;
};

class PowBackward : public Node {
 public:
  // e is saved (defined) only when x needs a gradient, y only when e does.
  PowBackward(Tensor x, Tensor e, Tensor y, Shape e_shape)
      : x_(std::move(x)), e_(std::move(e)), y_(std::move(y)), e_shape_(std::move(e_shape)) {}
  std::string name() const override { return "PowBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    Tensor gx, ge;
    if (e_.defined())
      gx = sum_to_shape(pointwise("pow_backward", PowGradBaseFn{}, g[0], x_, e_), x_.shape());
    if (y_.defined())
      ge = sum_to_shape(pointwise("pow_backward", PowGradExponentFn{}, g[0], x_, y_), e_shape_);
    return {gx, ge};
  }
  void release_saved() override {
    x_ = Tensor();
    e_ = Tensor();
    y_ = Tensor();
  }

 private:
  Tensor x_, e_, y_;
  Shape e_shape_;
};

class RpowScalarBackward : public Node {
 public:
  RpowScalarBackward(double base, Tensor y) : base_(base), y_(std::move(y)) {}
  std::string name() const override { return "RpowScalarBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("pow_backward", RpowGradFn{base_}, g[0], y_)};
  }
  void release_saved() override { y_ = Tensor(); }

 private:
  double base_;
  Tensor y_;
};

}  // namespace

Tensor pow(const Tensor& x, double exponent) {
  check_same_float("pow", {x});
  Tensor y = pointwise("pow", PowScalarFn{exponent}, x);
  if (needs_grad({x})) record(std::make_shared<PowScalarBackward>(saved(x), exponent), {x}, {&y});
  return y;
}

Tensor pow(const Tensor& x, const Tensor& exponent) {
  check_same_float("pow", {x, exponent});
  Tensor y = pointwise("pow", PowFn{}, x, exponent);
  if (needs_grad({x, exponent}))
    record(std::make_shared<PowBackward>(saved(x), x.requires_grad() ? saved(exponent) : Tensor(),
                                         exponent.requires_grad() ? saved(y) : Tensor(),
                                         exponent.shape()),
           {x, exponent}, {&y});
  return y;
}

Tensor pow(double base, const Tensor& exponent) {
  check_same_float("pow", {exponent});
  Tensor y = pointwise("pow", RpowScalarFn{base}, exponent);
  if (needs_grad({exponent}))
    record(std::make_shared<RpowScalarBackward>(base, saved(y)), {exponent}, {&y});
  return y;
}

}  // namespace rg
