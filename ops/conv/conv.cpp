#include "ops/conv/conv.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <type_traits>

#include "core/autograd.h"
#include "core/thread_pool.h"
#include "ops/add/add.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/conv/conv_kernel.h"
#include "ops/conv2d/conv2d_kernel.h"
#include "ops/conv3d/conv3d_kernel.h"
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

// The spatial axes' letters, for messages: "H, W" or "D, H, W".
template <int N>
constexpr const char* kAxes = N == 2 ? "H, W" : "D, H, W";
template <int N>
constexpr const char* kKernelAxes = N == 2 ? "kH, kW" : "kD, kH, kW";
template <int N>
constexpr const char* kOutputAxes = N == 2 ? "Ho, Wo" : "Do, Ho, Wo";

// "{1, 2}" or "{1, 2, 3}".
template <int N>
std::string size_str(const ConvSize<N>& s) {
  std::string text = "{";
  for (int a = 0; a < N; ++a) text += (a ? ", " : "") + std::to_string(s[a]);
  return text + "}";
}

// The kernels by device: the CPU's of the rank, cuDNN's on a GPU (conv_kernel.h).
template <int N>
Tensor conv_forward(OnCpu, const Tensor& x, const Tensor& w, const Tensor& b,
                    const ConvParams<N>& p) {
  return ConvCpuKernels<N>::forward(x, w, b, p);
}
template <int N>
Tensor conv_backward_data(OnCpu, const Tensor& gy, const Tensor& w, const Shape& x_shape,
                          const ConvParams<N>& p) {
  return ConvCpuKernels<N>::backward_data(gy, w, x_shape, p);
}
template <int N>
Tensor conv_backward_weight(OnCpu, const Tensor& gy, const Tensor& x, const Shape& w_shape,
                            const ConvParams<N>& p) {
  return ConvCpuKernels<N>::backward_weight(gy, x, w_shape, p);
}
template <int N>
Tensor conv_backward_bias(OnCpu, const Tensor& gy) {
  return ConvCpuKernels<N>::backward_bias(gy);
}

// The convolution's forward computes every output its geometry allows; when output_padding >=
// stride (possible when dilation > stride) that is more than x has, and the extra ones go.
Tensor crop_to(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  Tensor c = t;
  for (int64_t a = 2; a < static_cast<int64_t>(shape.size()); ++a) c = c.narrow(a, 0, shape[a]);
  return c.contiguous();
}

// Which of (x, weight, bias) need a gradient: an input without one needs no (GEMM-sized)
// computation, e.g. backward-data of the first layer, whose input is the data.
struct GradsNeeded {
  bool x, weight, bias;
};
GradsNeeded grads_needed(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return {x.requires_grad(), weight.requires_grad(), bias.defined() && bias.requires_grad()};
}

std::vector<Tensor> inputs_of(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  std::vector<Tensor> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return inputs;
}

// y[b, o, ...] += bias[o]
template <class T>
void add_bias(const Tensor& y, const Tensor& bias) {
  T* p = y.data<T>();
  const T* b = bias.data<T>();
  const int64_t O = y.size(1), P = y.numel() / std::max<int64_t>(1, y.size(0) * O);
  parallel_for(y.size(0) * O, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, P)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r)
                   for (int64_t i = 0; i < P; ++i) p[r * P + i] += b[r % O];
               });
}

}  // namespace

template <int N>
Shape conv_output_shape(std::string_view op, const Shape& x, const Shape& w,
                        const ConvParams<N>& p) {
  RG_CHECK(x.size() == N + 2, op, ": input must be ", N + 2, "-D (N, C, ", kAxes<N>, "), got ",
           shape_str(x));
  RG_CHECK(w.size() == N + 2, op, ": weight must be ", N + 2, "-D (O, C/groups, ", kKernelAxes<N>,
           "), got ", shape_str(w));
  for (int a = 0; a < N; ++a) {
    RG_CHECK(p.stride[a] >= 1 && p.dilation[a] >= 1 && p.padding[a] >= 0, op,
             ": stride and dilation must be >= 1 and padding >= 0, got stride ",
             size_str<N>(p.stride), ", padding ", size_str<N>(p.padding), ", dilation ",
             size_str<N>(p.dilation));
  }
  RG_CHECK(p.groups >= 1, op, ": groups must be >= 1, got ", p.groups);
  RG_CHECK(x[1] >= 1 && x[1] % p.groups == 0, op, ": input channels (", x[1], " in ", shape_str(x),
           ") must be a positive multiple of groups (", p.groups, ")");
  RG_CHECK(w[0] >= 1 && w[0] % p.groups == 0, op, ": output channels (", w[0], " in weight ",
           shape_str(w), ") must be a positive multiple of groups (", p.groups, ")");
  RG_CHECK(w[1] * p.groups == x[1], op, ": input ", shape_str(x), " has ", x[1],
           " channels but weight ", shape_str(w), " expects ", w[1], " × ", p.groups,
           " groups = ", w[1] * p.groups);
  for (int a = 0; a < N; ++a)
    RG_CHECK(w[2 + a] >= 1, op, ": kernel size must be >= 1, got weight ", shape_str(w));
  Shape y{x[0], w[0]};
  for (int a = 0; a < N; ++a) {
    const int64_t extent = p.dilation[a] * (w[2 + a] - 1) + 1;  // of the dilated kernel
    // Checked before dividing: C++ rounds a negative quotient up to 0, which would give 1.
    RG_CHECK(x[2 + a] + 2 * p.padding[a] >= extent, op, ": output size would be <= 0 for input ",
             shape_str(x), " (padded ", x[2 + a] + 2 * p.padding[a], ") and weight ", shape_str(w),
             " (dilated kernel ", extent, ")");
    y.push_back((x[2 + a] + 2 * p.padding[a] - extent) / p.stride[a] + 1);
  }
  return y;
}

template <int N>
Tensor conv_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                    const ConvParams<N>& p) {
  check_same_float(kConvName<N>, {x, weight, bias});
  return dispatch_device<Kernels::cpu_and_cuda>(
      kConvName<N>, x.device(), [&](auto on) { return conv_forward<N>(on, x, weight, bias, p); });
}

template <int N>
Tensor conv_backward_data(const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                          const ConvParams<N>& p) {
  const std::string op = std::string(kConvName<N>) + "_backward_data";
  check_same_float(op, {gy, weight});
  return dispatch_device<Kernels::cpu_and_cuda>(
      op, gy.device(), [&](auto on) { return conv_backward_data<N>(on, gy, weight, x_shape, p); });
}

template <int N>
Tensor conv_backward_weight(const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                            const ConvParams<N>& p) {
  const std::string op = std::string(kConvName<N>) + "_backward_weight";
  check_same_float(op, {gy, x});
  return dispatch_device<Kernels::cpu_and_cuda>(op, gy.device(), [&](auto on) {
    return conv_backward_weight<N>(on, gy, x, weight_shape, p);
  });
}

template <int N>
Tensor conv_backward_bias(const Tensor& gy) {
  const std::string op = std::string(kConvName<N>) + "_backward_bias";
  check_same_float(op, {gy});
  RG_CHECK(gy.dim() == N + 2, op, ": expected a ", N + 2, "-D (N, O, ", kOutputAxes<N>,
           ") gradient, got ", gy.describe());
  return dispatch_device<Kernels::cpu_and_cuda>(
      op, gy.device(), [&](auto on) { return conv_backward_bias<N>(on, gy); });
}

template <int N>
Tensor convolution(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in,
                   const ConvParams<N>& p) {
  constexpr std::string_view op = kConvName<N>;
  const auto cast = autocast_inputs(AutocastPolicy::lower_precision, x_in, weight_in, bias_in);
  const Tensor &x = cast[0], &weight = cast[1], &bias = cast[2];
  check_same_float(op, {x, weight, bias});
  RG_CHECK(x.dim() == N + 2, op, ": input must be ", N + 2, "-D (N, C, ", kAxes<N>, "), got ",
           x.describe());
  RG_CHECK(weight.dim() == N + 2, op, ": weight must be ", N + 2, "-D (O, C/groups, ",
           kKernelAxes<N>, "), got ", weight.describe());
  RG_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)), op,
           ": bias must be 1-D with ", weight.size(0), " elements (weight ", weight.describe(),
           "), got ", bias.describe());
  Tensor y = conv_forward<N>(x, weight, bias, p);
  if (needs_grad({x, weight, bias})) {
    const GradsNeeded need = grads_needed(x, weight, bias);
    // x is kept only when the weight needs a gradient, the weight only when x does.
    record_backward(N == 2 ? "Conv2dBackward" : "Conv3dBackward", inputs_of(x, weight, bias), y,
                    [x_saved = need.weight ? saved(x) : Tensor(), x_shape = x.shape(),
                     w_saved = need.x ? saved(weight) : Tensor(), w_shape = weight.shape(),
                     has_bias = bias.defined(), need, p](const Tensor& g) {
                      const Tensor gy = g.contiguous();
                      Grads grads(has_bias ? 3 : 2);
                      if (need.x) grads[0] = conv_backward_data<N>(gy, w_saved, x_shape, p);
                      if (need.weight) grads[1] = conv_backward_weight<N>(gy, x_saved, w_shape, p);
                      if (need.bias) grads[2] = conv_backward_bias<N>(gy);
                      return grads;
                    });
  }
  return y;
}

template <int N>
Tensor convolution_transpose(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in,
                             const ConvParams<N>& p, const ConvSize<N>& output_padding) {
  constexpr std::string_view op = kConvTransposeName<N>;
  const auto cast = autocast_inputs(AutocastPolicy::lower_precision, x_in, weight_in, bias_in);
  const Tensor &x = cast[0], &weight = cast[1], &bias = cast[2];
  check_same_float(op, {x, weight, bias});
  RG_CHECK(x.dim() == N + 2, op, ": input must be ", N + 2, "-D (N, Ci, ", kAxes<N>, "), got ",
           x.describe());
  RG_CHECK(weight.dim() == N + 2, op, ": weight must be ", N + 2, "-D (Ci, Co/groups, ",
           kKernelAxes<N>, "), got ", weight.describe());
  dispatch_floating(x.dtype(), op, [](auto) {});  // the dtype error names this op
  const int64_t groups = p.groups;
  RG_CHECK(groups >= 1, op, ": groups must be >= 1, got ", groups);
  RG_CHECK(x.size(1) % groups == 0, op, ": input channels (", x.size(1), " in ", x.describe(),
           ") must be a multiple of groups (", groups, ")");
  RG_CHECK(x.size(1) == weight.size(0), op, ": input ", x.describe(), " has ", x.size(1),
           " channels but weight ", weight.describe(), " expects ", weight.size(0));
  const int64_t out_channels = weight.size(1) * groups;
  RG_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out_channels), op,
           ": bias must be 1-D with ", out_channels, " elements (weight ", weight.describe(),
           ", groups ", groups, "), got ", bias.describe());
  Shape y_shape{x.size(0), out_channels};
  for (int a = 0; a < N; ++a) {
    RG_CHECK(p.stride[a] >= 1 && p.dilation[a] >= 1 && p.padding[a] >= 0 && output_padding[a] >= 0,
             op, ": stride and dilation must be >= 1, padding and output_padding >= 0, got stride ",
             size_str<N>(p.stride), ", padding ", size_str<N>(p.padding), ", output_padding ",
             size_str<N>(output_padding), ", dilation ", size_str<N>(p.dilation));
    RG_CHECK(output_padding[a] < p.stride[a] || output_padding[a] < p.dilation[a], op,
             ": output_padding ", size_str<N>(output_padding),
             " must be smaller than the stride or the dilation");
    y_shape.push_back((x.size(2 + a) - 1) * p.stride[a] - 2 * p.padding[a] +
                      p.dilation[a] * (weight.size(2 + a) - 1) + output_padding[a] + 1);
    RG_CHECK(y_shape.back() >= 1, op, ": output size would be ", y_shape.back(),
             " (<= 0) for input ", x.describe(), " and weight ", weight.describe());
  }
  // The convolution this is the adjoint of maps (B, Co, T...) to (B, Ci, S...), weight as given.
  // f16/bf16 on the CPU: computed in f32, bias included, and rounded once at the end (as the
  // convolution does). cuDNN reads 16-bit operands itself and accumulates in f32.
  const bool half = x.device().is_cpu() && (x.dtype() == DType::f16 || x.dtype() == DType::bf16);
  auto wide = [&](const Tensor& t) { return half ? t.detach().to(DType::f32) : t.detach(); };
  Tensor y = conv_backward_data<N>(wide(x), wide(weight), y_shape, p);
  if (bias.defined()) {
    const Tensor b = wide(bias).contiguous();
    dispatch_device<Kernels::cpu_and_cuda>(op, y.device(), [&](auto on) {
      if constexpr (std::is_same_v<decltype(on), OnCpu>) {
        dispatch_f32_f64(y.dtype(), op, [&](auto tag) { add_bias<decltype(tag)>(y, b); });
      } else {
        Shape view(N + 2, 1);
        view[1] = b.size(0);
        y = add(y, b.view(view));
      }
    });
  }
  if (half) y = y.to(x.dtype());
  if (needs_grad({x, weight, bias})) {
    const GradsNeeded need = grads_needed(x, weight, bias);
    // The convolution's roles swap: gx is its forward of gy (cropped where output_padding
    // reaches past what x has), gW its backward-weight with x as its "gy" and gy as its "x".
    record_backward(N == 2 ? "ConvTranspose2dBackward" : "ConvTranspose3dBackward",
                    inputs_of(x, weight, bias), y,
                    [x_saved = need.weight ? saved(x) : Tensor(), x_shape = x.shape(),
                     w_saved = need.x ? saved(weight) : Tensor(), w_shape = weight.shape(),
                     has_bias = bias.defined(), need, p](const Tensor& g) {
                      const Tensor gy = g.contiguous();
                      Grads grads(has_bias ? 3 : 2);
                      if (need.x)
                        grads[0] = crop_to(conv_forward<N>(gy, w_saved, Tensor(), p), x_shape);
                      if (need.weight) grads[1] = conv_backward_weight<N>(x_saved, gy, w_shape, p);
                      if (need.bias) grads[2] = conv_backward_bias<N>(gy);
                      return grads;
                    });
  }
  return y;
}

#define RG_CONV_RANK(N)                                                                 \
  template Shape conv_output_shape<N>(std::string_view, const Shape&, const Shape&,     \
                                      const ConvParams<N>&);                            \
  template Tensor conv_forward<N>(const Tensor&, const Tensor&, const Tensor&,          \
                                  const ConvParams<N>&);                                \
  template Tensor conv_backward_data<N>(const Tensor&, const Tensor&, const Shape&,     \
                                        const ConvParams<N>&);                          \
  template Tensor conv_backward_weight<N>(const Tensor&, const Tensor&, const Shape&,   \
                                          const ConvParams<N>&);                        \
  template Tensor conv_backward_bias<N>(const Tensor&);                                 \
  template Tensor convolution<N>(const Tensor&, const Tensor&, const Tensor&,           \
                                 const ConvParams<N>&);                                 \
  template Tensor convolution_transpose<N>(const Tensor&, const Tensor&, const Tensor&, \
                                           const ConvParams<N>&, const ConvSize<N>&);
RG_CONV_RANK(2)
RG_CONV_RANK(3)
#undef RG_CONV_RANK

}  // namespace rg
