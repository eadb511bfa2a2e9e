#include "ops/sigmoid/sigmoid.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/sigmoid/sigmoid_functors.h"

namespace rg {
namespace {

class SigmoidBackward : public Node {
 public:
  explicit SigmoidBackward(Tensor y) : y_(std::move(y)) {}
  std::string name() const override { return "SigmoidBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("sigmoid_backward", SigmoidGradFn{}, g[0], y_)};
  }
  void release_saved() override { y_ = Tensor(); }

 private:
  Tensor y_;
};

}  // namespace

Tensor sigmoid(const Tensor& x) {
  check_same_float("sigmoid", {x});
  Tensor y = pointwise("sigmoid", SigmoidFn{}, x);
  if (needs_grad({x})) record(std::make_shared<SigmoidBackward>(saved(y)), {x}, {&y});
  return y;
}

}  // namespace rg
