#include "ops/gelu/gelu.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/gelu/gelu_functors.h"

namespace rg {
namespace {

class GeluBackward : public Node {
 public:
  explicit GeluBackward(Tensor x) : x_(std::move(x)) {}
  std::string name() const override { return "GeluBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("gelu_backward", GeluGradFn{}, g[0], x_)};
  }
  void release_saved() override { x_ = Tensor(); }

 private:
  Tensor x_;
};

}  // namespace

Tensor gelu(const Tensor& x) {
  check_same_float("gelu", {x});
  // pointwise() picks the device's kernel (core/dispatch.h): the CPU loop or the CUDA kernel.
  Tensor y = pointwise("gelu", GeluFn{}, x);
  if (needs_grad({x})) record(std::make_shared<GeluBackward>(saved(x)), {x}, {&y});
  return y;
}

}  // namespace rg
