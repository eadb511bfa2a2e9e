#include "ops/linear/linear.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/linear/linear_kernel.h"

namespace rg {
namespace {

class LinearBackward : public Node {
 public:
  // x2: (M, I) kept only for gweight; w: (O, I) kept only for gx.
  LinearBackward(Tensor x2, Tensor w, Shape x_shape)
      : x2_(std::move(x2)), w_(std::move(w)), x_shape_(std::move(x_shape)) {}
  std::string name() const override { return "LinearBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const int64_t o = grads[0].size(-1);
    const Tensor gy2 = grads[0].reshape({-1, o});
    detail::LinearWants wants;
    wants.x2 = next_edges[0].node != nullptr;
    wants.weight = next_edges[1].node != nullptr;
    wants.bias = next_edges.size() > 2 && next_edges[2].node != nullptr;
    const detail::LinearGrads g = dispatch_device<Kernels::cpu_and_cuda>(
        "linear", gy2.device(),
        [&](auto on) { return detail::linear_backward(on, gy2, x2_, w_, wants); });
    const Tensor gx = g.x2.defined() ? g.x2.view(x_shape_) : Tensor();
    if (next_edges.size() > 2) return {gx, g.weight, g.bias};
    return {gx, g.weight};
  }
  void release_saved() override { x2_ = w_ = Tensor(); }

 private:
  Tensor x2_, w_;
  Shape x_shape_;
};

}  // namespace

Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in) {
  const auto cast = autocast_inputs(AutocastPolicy::lower_precision, x_in, weight_in, bias_in);
  const Tensor &x = cast[0], &weight = cast[1], &bias = cast[2];
  check_same_float("linear", {x, weight, bias});
  RG_CHECK(weight.dim() == 2, "linear: weight must be 2-D (out_features, in_features), got ",
           weight.describe());
  RG_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input ", x.describe(),
           " does not match weight ", weight.describe(), " (the last dim of the input must be ",
           weight.size(1), ")");
  RG_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
           "linear: bias must be 1-D with ", weight.size(0), " elements (out_features), got ",
           bias.describe());
  const int64_t in = weight.size(1), out = weight.size(0);
  // Detached: the node below is the only history of y (not a reshape node on the way).
  const Tensor x2 = x.detach().reshape({-1, in});
  Shape y_shape = x.shape();
  y_shape.back() = out;
  const Tensor w = weight.detach(), b = bias.defined() ? bias.detach() : Tensor();
  Tensor y = dispatch_device<Kernels::cpu_and_cuda>("linear", x.device(), [&](auto on) {
               return detail::linear_forward(on, x2, w, b);
             }).view(y_shape);
  if (needs_grad({x, weight, bias})) {
    auto node =
        std::make_shared<LinearBackward>(weight.requires_grad() ? saved(x2) : Tensor(),
                                         x.requires_grad() ? saved(weight) : Tensor(), x.shape());
    if (bias.defined())
      record(node, {x, weight, bias}, {&y});
    else
      record(node, {x, weight}, {&y});
  }
  return y;
}

}  // namespace rg
