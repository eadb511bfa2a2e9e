#include "ops/conv_transpose2d/conv_transpose2d.h"

#include <algorithm>
#include <type_traits>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/add/add.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace {

// conv2d's forward computes every output its geometry allows; when output_padding >= stride
// (possible when dilation > stride) that is more than x has, and the extra rows are dropped.
Tensor crop_to(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  return t.narrow(2, 0, shape[2]).narrow(3, 0, shape[3]).contiguous();
}

class ConvTranspose2dBackward : public Node {
 public:
  // x is kept only when the weight needs a gradient, the weight only when x does.
  ConvTranspose2dBackward(Tensor x, Shape x_shape, Tensor weight, Shape weight_shape, bool has_bias,
                          Conv2dParams p)
      : x_(std::move(x)),
        weight_(std::move(weight)),
        x_shape_(std::move(x_shape)),
        weight_shape_(std::move(weight_shape)),
        has_bias_(has_bias),
        p_(p) {}
  std::string name() const override { return "ConvTranspose2dBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gy = g[0].contiguous();
    std::vector<Tensor> grads(has_bias_ ? 3 : 2);
    if (next_edges[0].node) grads[0] = crop_to(conv2d_forward(gy, weight_, Tensor(), p_), x_shape_);
    if (next_edges[1].node) grads[1] = conv2d_backward_weight(x_, gy, weight_shape_, p_);
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

// y[n, o, :, :] += bias[o]
template <class T>
void add_bias(const Tensor& y, const Tensor& bias) {
  T* p = y.data<T>();
  const T* b = bias.data<T>();
  const int64_t N = y.size(0), O = y.size(1), P = y.size(2) * y.size(3);
  parallel_for(N * O, std::max<int64_t>(1, (1 << 14) / P), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r)
      for (int64_t i = 0; i < P; ++i) p[r * P + i] += b[r % O];
  });
}

}  // namespace

Tensor conv_transpose2d(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in,

                        Conv2dPair stride, Conv2dPair padding, Conv2dPair output_padding,
                        int64_t groups, Conv2dPair dilation) {
  const auto cast = autocast_inputs(AutocastPolicy::lower_precision, x_in, weight_in, bias_in);
  const Tensor &x = cast[0], &weight = cast[1], &bias = cast[2];
  constexpr const char* op = "conv_transpose2d";
  check_same_float(op, {x, weight, bias});
  RG_CHECK(x.dim() == 4, op, ": input must be 4-D (N, Ci, H, W), got ", x.describe());
  RG_CHECK(weight.dim() == 4, op, ": weight must be 4-D (Ci, Co/groups, kH, kW), got ",
           weight.describe());
  dispatch_floating(x.dtype(), op, [](auto) {});  // the dtype error names this op
  RG_CHECK(groups >= 1, op, ": groups must be >= 1, got ", groups);
  RG_CHECK(x.size(1) % groups == 0, op, ": input channels (", x.size(1), " in ", x.describe(),
           ") must be a multiple of groups (", groups, ")");
  RG_CHECK(x.size(1) == weight.size(0), op, ": input ", x.describe(), " has ", x.size(1),
           " channels but weight ", weight.describe(), " expects ", weight.size(0));
  const int64_t out_channels = weight.size(1) * groups;
  RG_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out_channels), op,
           ": bias must be 1-D with ", out_channels, " elements (weight ", weight.describe(),
           ", groups ", groups, "), got ", bias.describe());
  Shape y_shape{x.size(0), out_channels, 0, 0};
  for (int a = 0; a < 2; ++a) {
    RG_CHECK(stride[a] >= 1 && dilation[a] >= 1 && padding[a] >= 0 && output_padding[a] >= 0, op,
             ": stride and dilation must be >= 1, padding and output_padding >= 0, got stride {",
             stride[0], ", ", stride[1], "}, padding {", padding[0], ", ", padding[1],
             "}, output_padding {", output_padding[0], ", ", output_padding[1], "}, dilation {",
             dilation[0], ", ", dilation[1], "}");
    RG_CHECK(output_padding[a] < stride[a] || output_padding[a] < dilation[a], op,
             ": output_padding {", output_padding[0], ", ", output_padding[1],
             "} must be smaller than the stride or the dilation");
    y_shape[2 + a] = (x.size(2 + a) - 1) * stride[a] - 2 * padding[a] +
                     dilation[a] * (weight.size(2 + a) - 1) + output_padding[a] + 1;
    RG_CHECK(y_shape[2 + a] >= 1, op, ": output size would be ", y_shape[2 + a],
             " (<= 0) for input ", x.describe(), " and weight ", weight.describe());
  }
  // The conv2d this is the adjoint of: (N, Co, Ho, Wo) -> (N, Ci, H, W), weight as given.
  const Conv2dParams p{stride, padding, dilation, groups};
  // f16/bf16 on the CPU: computed in f32, bias included, and rounded once at the end (as conv2d
  // does). cuDNN reads 16-bit operands itself and accumulates in f32.
  const bool half = x.device().is_cpu() && (x.dtype() == DType::f16 || x.dtype() == DType::bf16);
  auto wide = [&](const Tensor& t) { return half ? t.detach().to(DType::f32) : t.detach(); };
  Tensor y = conv2d_backward_data(wide(x), wide(weight), y_shape, p);
  if (bias.defined()) {
    const Tensor b = wide(bias).contiguous();
    dispatch_device<Kernels::cpu_and_cuda>(op, y.device(), [&](auto on) {
      if constexpr (std::is_same_v<decltype(on), OnCpu>)
        dispatch_f32_f64(y.dtype(), op, [&](auto tag) { add_bias<decltype(tag)>(y, b); });
      else
        y = add(y, b.view({1, b.size(0), 1, 1}));
    });
  }
  if (half) y = y.to(x.dtype());
  if (needs_grad({x, weight, bias})) {
    const bool gx = x.requires_grad(), gw = weight.requires_grad();
    auto node = std::make_shared<ConvTranspose2dBackward>(gw ? saved(x) : Tensor(), x.shape(),
                                                          gx ? saved(weight) : Tensor(),
                                                          weight.shape(), bias.defined(), p);
    std::vector<Tensor> inputs{x, weight};
    if (bias.defined()) inputs.push_back(bias);
    record(node, inputs, {&y});
  }
  return y;
}

}  // namespace rg
