#include "ops/relu/relu.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/relu/relu_functors.h"

namespace rg {
namespace {

class ReluBackward : public Node {
 public:
  explicit ReluBackward(Tensor y) : y_(std::move(y)) {}
  std::string name() const override { return "ReluBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("relu_backward", ReluGradFn{}, g[0], y_)};
  }
  void release_saved() override { y_ = Tensor(); }

 private:
  Tensor y_;
};

}  // namespace

Tensor relu(const Tensor& x) {
  check_same_float("relu", {x});
  Tensor y = pointwise("relu", ReluFn{}, x);
  if (needs_grad({x})) record(std::make_shared<ReluBackward>(saved(y)), {x}, {&y});
  return y;
}

}  // namespace rg
