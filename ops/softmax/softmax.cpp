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
    return {detail::softmax_backward(g[0], y_, dim_, detail::SoftmaxKind::softmax)};
  }
  void release_saved() override { y_ = Tensor(); }

 private:
  Tensor y_;
  int64_t dim_;
};

}  // namespace

Tensor detail::softmax_forward(const Tensor& x, int64_t dim, SoftmaxKind kind) {
  const char* op = kind == SoftmaxKind::softmax ? "softmax" : "log_softmax";
  return dispatch_device<Kernels::cpu_and_cuda>(
      op, x.device(), [&](auto on) { return softmax_forward(on, x, dim, kind); });
}

Tensor detail::softmax_backward(const Tensor& gy, const Tensor& y, int64_t dim, SoftmaxKind kind) {
  const char* op = kind == SoftmaxKind::softmax ? "softmax_backward" : "log_softmax_backward";
  check_same_float(op, {gy, y});
  return dispatch_device<Kernels::cpu_and_cuda>(
      op, y.device(), [&](auto on) { return softmax_backward(on, gy, y, dim, kind); });
}

Tensor softmax(const Tensor& x_in, int64_t dim) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, x_in);
  const Tensor& x = cast[0];
  check_same_float("softmax", {x});
  dim = normalize_dim(dim, x.dim(), "softmax");
  Tensor y = detail::softmax_forward(x, dim, detail::SoftmaxKind::softmax);
  if (needs_grad({x})) record(std::make_shared<SoftmaxBackward>(saved(y), dim), {x}, {&y});
  return y;
}

}  // namespace rg
