#include "ops/softmax/softmax.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/softmax/softmax_kernel.h"

namespace rg {
namespace {

class SoftmaxBackward : public Node {
 public:
  SoftmaxBackward(Tensor y, int64_t dim) : y_(std::move(y)), dim_(dim) {}
  std::string name() const override { return "SoftmaxBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {detail::softmax_backward_cpu(g[0], y_, dim_, detail::SoftmaxKind::softmax)};
  }
  void release_saved() override { y_ = Tensor(); }

 private:
  Tensor y_;
  int64_t dim_;
};

}  // namespace

Tensor softmax(const Tensor& x_in, int64_t dim) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, x_in);
  const Tensor& x = cast[0];
  check_same_float("softmax", {x});
  check_cpu("softmax", {x});
  dim = normalize_dim(dim, x.dim(), "softmax");
  Tensor y = detail::softmax_cpu(x, dim, detail::SoftmaxKind::softmax);
  if (needs_grad({x})) record(std::make_shared<SoftmaxBackward>(saved(y), dim), {x}, {&y});
  return y;
}

}  // namespace rg
