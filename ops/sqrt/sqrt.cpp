#include "ops/sqrt/sqrt.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/sqrt/sqrt_functors.h"

namespace rg {
namespace {

class SqrtBackward : public Node {
 public:
  explicit SqrtBackward(Tensor y) : y_(std::move(y)) {}
  std::string name() const override { return "SqrtBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("sqrt_backward", SqrtGradFn{}, g[0], y_)};
  }
  void release_saved() override { y_ = Tensor(); }

 private:
  Tensor y_;
};

}  // namespace

Tensor sqrt(const Tensor& x) {
  check_same_float("sqrt", {x});
  Tensor y = pointwise("sqrt", SqrtFn{}, x);
  if (needs_grad({x})) record(std::make_shared<SqrtBackward>(saved(y)), {x}, {&y});
  return y;
}

}  // namespace rg
