#include "ops/softsign/softsign.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/softsign/softsign_functors.h"

namespace my {
namespace {

class SoftsignBackward : public rg::Node {
 public:
  explicit SoftsignBackward(rg::Tensor x) : x_(std::move(x)) {}
  std::string name() const override { return "SoftsignBackward"; }
  std::vector<rg::Tensor> apply(const std::vector<rg::Tensor>& g) override {
    return {rg::pointwise("softsign_backward", SoftsignGradFn{}, g[0], x_)};
  }
  void release_saved() override { x_ = rg::Tensor(); }

 private:
  rg::Tensor x_;
};

}  // namespace

rg::Tensor softsign(const rg::Tensor& x) {
  rg::check_same_float("softsign", {x});
  rg::Tensor y = rg::pointwise("softsign", SoftsignFn{}, x);
  if (rg::needs_grad({x})) rg::record(std::make_shared<SoftsignBackward>(rg::saved(x)), {x}, {&y});
  return y;
}

}  // namespace my
