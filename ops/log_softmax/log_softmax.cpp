#include "ops/log_softmax/log_softmax.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/softmax/softmax_kernel.h"

namespace rg {
namespace {

class LogSoftmaxBackward : public Node {
 public:
  LogSoftmaxBackward(Tensor y, int64_t dim) : y_(std::move(y)), dim_(dim) {}
  std::string name() const override { return "LogSoftmaxBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {detail::softmax_backward(g[0], y_, dim_, detail::SoftmaxKind::log_softmax)};
  }
  void release_saved() override { y_ = Tensor(); }

 private:
  Tensor y_;
  int64_t dim_;
};

}  // namespace

Tensor log_softmax(const Tensor& x_in, int64_t dim) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, x_in);
  const Tensor& x = cast[0];
  check_same_float("log_softmax", {x});
  dim = normalize_dim(dim, x.dim(), "log_softmax");
  Tensor y = detail::softmax_forward(x, dim, detail::SoftmaxKind::log_softmax);
  if (needs_grad({x})) record(std::make_shared<LogSoftmaxBackward>(saved(y), dim), {x}, {&y});
  return y;
}

}  // namespace rg
