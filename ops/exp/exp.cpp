#include "ops/exp/exp.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/exp/exp_functors.h"
#include "ops/mul/mul_functors.h"

namespace rg {
namespace {

class ExpBackward : public Node {
 public:
  explicit ExpBackward(Tensor y) : y_(std::move(y)) {}
  std::string name() const override { return "ExpBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("exp_backward", MulFn{}, g[0], y_)};
  }
  void release_saved() override { y_ = Tensor(); }

 private:
  Tensor y_;
};

}  // namespace

Tensor exp(const Tensor& x) {
  check_same_float("exp", {x});
  Tensor y = pointwise("exp", ExpFn{}, x);
  if (needs_grad({x})) record(std::make_shared<ExpBackward>(saved(y)), {x}, {&y});
  return y;
}

}  // namespace rg
