#include "ops/conv_transpose3d/conv_transpose3d.h"

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

// conv3d's forward computes every output its geometry allows; when output_padding >= stride
// (possible when dilation > stride) that is more than x has, and the extra slices are dropped.
Tensor crop_to(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  return t.narrow(2, 0, shape[2]).narrow(3, 0, shape[3]).narrow(4, 0, shape[4]).contiguous();
}

class ConvTranspose3dBackward : public Node {
 public:
  // x is kept only when the weight needs a gradient, the weight only when x does.
  ConvTranspose3dBackward(Tensor x, Shape x_shape, Tensor weight, Shape weight_shape, bool has_bias,
                          Conv3dParams p)
      : x_(std::move(x)),
        weight_(std::move(weight)),
        x_shape_(std::move(x_shape)),
        weight_shape_(std::move(weight_shape)),
        has_bias_(has_bias),
        p_(p) {}
  std::string name() const override { return "ConvTranspose3dBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gy = g[0].contiguous();
    std::vector<Tensor> grads(has_bias_ ? 3 : 2);
    if (next_edges[0].node) grads[0] = crop_to(conv3d_forward(gy, weight_, Tensor(), p_), x_shape_);
    if (next_edges[1].node) grads[1] = conv3d_backward_weight(x_, gy, weight_shape_, p_);
    if (has_bias_ && next_edges[2].node) grads[2] = conv3d_backward_bias(gy);
    return grads;
  }
  void release_saved() override { x_ = weight_ = Tensor(); }

 private:
  Tensor x_, weight_;
  Shape x_shape_, weight_shape_;
  bool has_bias_;
  Conv3dParams p_;
};

// y[n, o, ...] += bias[o]
template <class T>
void add_bias(const Tensor& y, const Tensor& bias) {
  T* p = y.data<T>();
  const T* b = bias.data<T>();
  const int64_t O = y.size(1), P = y.size(2) * y.size(3) * y.size(4);
  parallel_for(y.size(0) * O, std::max<int64_t>(1, (1 << 14) / P), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r)
      for (int64_t i = 0; i < P; ++i) p[r * P + i] += b[r % O];
  });
}

std::string triple_str(const Conv3dTriple& t) {
  return "{" + std::to_string(t[0]) + ", " + std::to_string(t[1]) + ", " + std::to_string(t[2]) +
         "}";
}

}  // namespace

Tensor conv_transpose3d(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in,
                        Conv3dTriple stride, Conv3dTriple padding, Conv3dTriple output_padding,
                        int64_t groups, Conv3dTriple dilation) {
  const auto cast = autocast_inputs(AutocastPolicy::lower_precision, x_in, weight_in, bias_in);
  const Tensor &x = cast[0], &weight = cast[1], &bias = cast[2];
  constexpr const char* op = "conv_transpose3d";
  check_same_float(op, {x, weight, bias});
  RG_CHECK(x.dim() == 5, op, ": input must be 5-D (N, Ci, D, H, W), got ", x.describe());
  RG_CHECK(weight.dim() == 5, op, ": weight must be 5-D (Ci, Co/groups, kD, kH, kW), got ",
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
  Shape y_shape{x.size(0), out_channels, 0, 0, 0};
  for (int a = 0; a < 3; ++a) {
    RG_CHECK(stride[a] >= 1 && dilation[a] >= 1 && padding[a] >= 0 && output_padding[a] >= 0, op,
             ": stride and dilation must be >= 1, padding and output_padding >= 0, got stride ",
             triple_str(stride), ", padding ", triple_str(padding), ", output_padding ",
             triple_str(output_padding), ", dilation ", triple_str(dilation));
    RG_CHECK(output_padding[a] < stride[a] || output_padding[a] < dilation[a], op,
             ": output_padding ", triple_str(output_padding),
             " must be smaller than the stride or the dilation");
    y_shape[2 + a] = (x.size(2 + a) - 1) * stride[a] - 2 * padding[a] +
                     dilation[a] * (weight.size(2 + a) - 1) + output_padding[a] + 1;
    RG_CHECK(y_shape[2 + a] >= 1, op, ": output size would be ", y_shape[2 + a],
             " (<= 0) for input ", x.describe(), " and weight ", weight.describe());
  }
  // The conv3d this is the adjoint of: (N, Co, Do, Ho, Wo) -> (N, Ci, D, H, W), weight as given.
  const Conv3dParams p{stride, padding, dilation, groups};
  // f16/bf16 on the CPU: computed in f32, bias included, and rounded once at the end (as conv3d
  // does). cuDNN reads 16-bit operands itself and accumulates in f32.
  const bool half = x.device().is_cpu() && (x.dtype() == DType::f16 || x.dtype() == DType::bf16);
  auto wide = [&](const Tensor& t) { return half ? t.detach().to(DType::f32) : t.detach(); };
  Tensor y = conv3d_backward_data(wide(x), wide(weight), y_shape, p);
  if (bias.defined()) {
    const Tensor b = wide(bias).contiguous();
    dispatch_device<Kernels::cpu_and_cuda>(op, y.device(), [&](auto on) {
      if constexpr (std::is_same_v<decltype(on), OnCpu>)
        dispatch_f32_f64(y.dtype(), op, [&](auto tag) { add_bias<decltype(tag)>(y, b); });
      else
        y = add(y, b.view({1, b.size(0), 1, 1, 1}));
    });
  }
  if (half) y = y.to(x.dtype());
  if (needs_grad({x, weight, bias})) {
    const bool gx = x.requires_grad(), gw = weight.requires_grad();
    auto node = std::make_shared<ConvTranspose3dBackward>(gw ? saved(x) : Tensor(), x.shape(),
                                                          gx ? saved(weight) : Tensor(),
                                                          weight.shape(), bias.defined(), p);
    std::vector<Tensor> inputs{x, weight};
    if (bias.defined()) inputs.push_back(bias);
    record(node, inputs, {&y});
  }
  return y;
}

}  // namespace rg
