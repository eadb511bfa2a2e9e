#include "ops/leaky_relu/leaky_relu.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/leaky_relu/leaky_relu_functors.h"

namespace rg {
namespace {

class LeakyReluBackward : public Node {
 public:
  LeakyReluBackward(Tensor x, double negative_slope)
      : x_(std::move(x)), negative_slope_(negative_slope) {}
  std::string name() const override { return "LeakyReluBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("leaky_relu_backward", LeakyReluGradFn{negative_slope_}, g[0], x_)};
  }
  void release_saved() override { x_ = Tensor(); }

 private:
  Tensor x_;
  double negative_slope_;
};

}  // namespace

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  check_same_float("leaky_relu", {x});
  Tensor y = pointwise("leaky_relu", LeakyReluFn{negative_slope}, x);
  if (needs_grad({x}))
    record(std::make_shared<LeakyReluBackward>(saved(x), negative_slope), {x}, {&y});
  return y;
}

}  // namespace rg
