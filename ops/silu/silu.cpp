#include "ops/silu/silu.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/silu/silu_functors.h"

namespace rg {
namespace {

class SiluBackward : public Node {
 public:
  explicit SiluBackward(Tensor x) : x_(std::move(x)) {}
  std::string name() const override { return "SiluBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("silu_backward", SiluGradFn{}, g[0], x_)};
  }
  void release_saved() override { x_ = Tensor(); }

 private:
  Tensor x_;
};

}  // namespace

Tensor silu(const Tensor& x) {
  check_same_float("silu", {x});
  // pointwise() picks the device's kernel (core/dispatch.h): the CPU loop or the CUDA kernel.
  Tensor y = pointwise("silu", SiluFn{}, x);
  if (needs_grad({x})) record(std::make_shared<SiluBackward>(saved(x)), {x}, {&y});
  return y;
}

}  // namespace rg
