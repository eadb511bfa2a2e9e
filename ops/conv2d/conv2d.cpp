#include "ops/conv2d/conv2d.h"

#include <atomic>

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/conv2d/conv2d_kernel.h"
#include "ops/elementwise/elementwise.h"

namespace rg {

namespace {
std::atomic<bool> deterministic_mode{false};
std::atomic<bool> benchmark_mode{false};
}  // namespace

void set_deterministic_convolutions(bool deterministic) {
  deterministic_mode = deterministic;
}

bool deterministic_convolutions() {
  return deterministic_mode;
}

void set_benchmark_convolutions(bool benchmark) {
  benchmark_mode = benchmark;
}

bool benchmark_convolutions() {
  return benchmark_mode;
}
namespace {

class Conv2dBackward : public Node {
 public:
  // x is kept only when the weight needs a gradient, the weight only when x does.
  Conv2dBackward(Tensor x, Shape x_shape, Tensor weight, Shape weight_shape, bool has_bias,
                 Conv2dParams p)
      : x_(std::move(x)),
        weight_(std::move(weight)),
        x_shape_(std::move(x_shape)),
        weight_shape_(std::move(weight_shape)),
        has_bias_(has_bias),
        p_(p) {}
  std::string name() const override { return "Conv2dBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gy = g[0].contiguous();
    // An input without an edge needs no gradient: skip its (GEMM-sized) computation, e.g.
    // backward-data of the first layer, whose input is the data.
    std::vector<Tensor> grads(has_bias_ ? 3 : 2);
    if (next_edges[0].node) grads[0] = conv2d_backward_data(gy, weight_, x_shape_, p_);
    if (next_edges[1].node) grads[1] = conv2d_backward_weight(gy, x_, weight_shape_, p_);
    if (has_bias_ && next_edges[2].node) grads[2] = conv2d_backward_bias(gy);
    return grads;
  }
  void release_saved() override { x_ = weight_ = Tensor(); }

 private:
  Tensor x_, weight_;
  Shape x_shape_, weight_shape_;
  bool has_bias_;
  Conv2dParams p_;
};

}  // namespace

Shape conv2d_output_shape(std::string_view op, const Shape& x, const Shape& w,
                          const Conv2dParams& p) {
  RG_CHECK(x.size() == 4, op, ": input must be 4-D (N, C, H, W), got ", shape_str(x));
  RG_CHECK(w.size() == 4, op, ": weight must be 4-D (O, C/groups, kH, kW), got ", shape_str(w));
  for (int a = 0; a < 2; ++a) {
    RG_CHECK(p.stride[a] >= 1 && p.dilation[a] >= 1 && p.padding[a] >= 0, op,
             ": stride and dilation must be >= 1 and padding >= 0, got stride {", p.stride[0], ", ",
             p.stride[1], "}, padding {", p.padding[0], ", ", p.padding[1], "}, dilation {",
             p.dilation[0], ", ", p.dilation[1], "}");
  }
  RG_CHECK(p.groups >= 1, op, ": groups must be >= 1, got ", p.groups);
  RG_CHECK(x[1] >= 1 && x[1] % p.groups == 0, op, ": input channels (", x[1], " in ", shape_str(x),
           ") must be a positive multiple of groups (", p.groups, ")");
  RG_CHECK(w[0] >= 1 && w[0] % p.groups == 0, op, ": output channels (", w[0], " in weight ",
           shape_str(w), ") must be a positive multiple of groups (", p.groups, ")");
  RG_CHECK(w[1] * p.groups == x[1], op, ": input ", shape_str(x), " has ", x[1],
           " channels but weight ", shape_str(w), " expects ", w[1], " × ", p.groups,
           " groups = ", w[1] * p.groups);
  RG_CHECK(w[2] >= 1 && w[3] >= 1, op, ": kernel size must be >= 1, got weight ", shape_str(w));
  Shape y{x[0], w[0], 0, 0};
  for (int a = 0; a < 2; ++a) {
    const int64_t extent = p.dilation[a] * (w[2 + a] - 1) + 1;  // of the dilated kernel
    // Checked before dividing: C++ rounds a negative quotient up to 0, which would give 1.
    RG_CHECK(x[2 + a] + 2 * p.padding[a] >= extent, op, ": output size would be <= 0 for input ",
             shape_str(x), " (padded ", x[2 + a] + 2 * p.padding[a], ") and weight ", shape_str(w),
             " (dilated kernel ", extent, ")");
    y[2 + a] = (x[2 + a] + 2 * p.padding[a] - extent) / p.stride[a] + 1;
  }
  return y;
}

// The kernels, by device (conv2d_kernel.h).
Tensor conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& p) {
  check_same_float("conv2d", {x, weight, bias});
  return dispatch_device<Kernels::cpu_and_cuda>(
      "conv2d", x.device(), [&](auto on) { return conv2d_forward(on, x, weight, bias, p); });
}

Tensor conv2d_backward_data(const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                            const Conv2dParams& p) {
  check_same_float("conv2d_backward_data", {gy, weight});
  return dispatch_device<Kernels::cpu_and_cuda>("conv2d_backward_data", gy.device(), [&](auto on) {
    return conv2d_backward_data(on, gy, weight, x_shape, p);
  });
}

Tensor conv2d_backward_weight(const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                              const Conv2dParams& p) {
  check_same_float("conv2d_backward_weight", {gy, x});
  return dispatch_device<Kernels::cpu_and_cuda>(
      "conv2d_backward_weight", gy.device(),
      [&](auto on) { return conv2d_backward_weight(on, gy, x, weight_shape, p); });
}

Tensor conv2d_backward_bias(const Tensor& gy) {
  check_same_float("conv2d_backward_bias", {gy});
  return dispatch_device<Kernels::cpu_and_cuda>(
      "conv2d_backward_bias", gy.device(), [&](auto on) { return conv2d_backward_bias(on, gy); });
}

Tensor conv2d(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in, Conv2dPair stride,
              Conv2dPair padding, Conv2dPair dilation, int64_t groups) {
  const auto cast = autocast_inputs(AutocastPolicy::lower_precision, x_in, weight_in, bias_in);
  const Tensor &x = cast[0], &weight = cast[1], &bias = cast[2];
  check_same_float("conv2d", {x, weight, bias});
  RG_CHECK(x.dim() == 4, "conv2d: input must be 4-D (N, C, H, W), got ", x.describe());
  RG_CHECK(weight.dim() == 4, "conv2d: weight must be 4-D (O, C/groups, kH, kW), got ",
           weight.describe());
  RG_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
           "conv2d: bias must be 1-D with ", weight.size(0), " elements (weight ",
           weight.describe(), "), got ", bias.describe());
  const Conv2dParams p{stride, padding, dilation, groups};
  Tensor y = conv2d_forward(x, weight, bias, p);
  if (needs_grad({x, weight, bias})) {
    const bool gx = x.requires_grad(), gw = weight.requires_grad();
    auto node = std::make_shared<Conv2dBackward>(gw ? saved(x) : Tensor(), x.shape(),
                                                 gx ? saved(weight) : Tensor(), weight.shape(),
                                                 bias.defined(), p);
    std::vector<Tensor> inputs{x, weight};
    if (bias.defined()) inputs.push_back(bias);
    record(node, inputs, {&y});
  }
  return y;
}

}  // namespace rg
