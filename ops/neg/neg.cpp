#include "ops/neg/neg.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/neg/neg_functors.h"

namespace rg {
namespace {

class NegBackward : public Node {
 public:
  std::string name() const override { return "NegBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("neg_backward", NegFn{}, g[0])};
  }
};

}  // namespace

Tensor neg(const Tensor& x) {
  check_same_float("neg", {x});
  Tensor y = pointwise("neg", NegFn{}, x);
  if (needs_grad({x})) record(std::make_shared<NegBackward>(), {x}, {&y});
  return y;
}

Tensor operator-(const Tensor& x) {
  return neg(x);
}

}  // namespace rg
