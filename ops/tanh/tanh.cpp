#include "ops/tanh/tanh.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/tanh/tanh_functors.h"

namespace rg {
namespace {

class TanhBackward : public Node {
 public:
  explicit TanhBackward(Tensor y) : y_(std::move(y)) {}
  std::string name() const override { return "TanhBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("tanh_backward", TanhGradFn{}, g[0], y_)};
  }
  void release_saved() override { y_ = Tensor(); }

 private:
  Tensor y_;
};

}  // namespace

Tensor tanh(const Tensor& x) {
  check_same_float("tanh", {x});
  Tensor y = pointwise("tanh", TanhFn{}, x);
  if (needs_grad({x})) record(std::make_shared<TanhBackward>(saved(y)), {x}, {&y});
  return y;
}

}  // namespace rg
