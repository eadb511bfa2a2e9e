#include "ops/conv/conv.h"

#include <atomic>
#include <string>

#include "core/autograd.h"
#include "core/kernel_log.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/conv/conv_grads.h"
#include "ops/conv/conv_kernel.h"
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

}  // namespace

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
  RG_CHECK(gy.dim() == N + 2, op, ": expected a ", N + 2, "-D (N, O, ", kConvOutputAxes<N>,
           ") gradient, got ", gy.describe());
  return dispatch_device<Kernels::cpu_and_cuda>(
      op, gy.device(), [&](auto on) { return conv_backward_bias<N>(on, gy); });
}

template <int N>
Tensor convolution(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in,
                   const ConvParams<N>& p) {
  constexpr std::string_view op = kConvName<N>;
  // Autocast's lower precision, unless the CPU's f32 kernels are faster for this shape than its
  // bf16 ones on every pass (conv2d/README.md's rule): then the convolution runs as in f32.
  bool keep_f32 = false;
  if constexpr (N == 2) {
    keep_f32 = autocast_dtype() == DType::bf16 && x_in.device().is_cpu() && x_in.dim() == 4 &&
               weight_in.dim() == 4 &&
               ConvCpuKernels<2>::bf16_autocast_keeps_f32(x_in.shape(), weight_in.shape(), p);
    if (keep_f32)
      note_kernel(op, conv2d_problem(x_in.shape(), weight_in.shape(), p, DType::bf16),
                  "f32 kernels: autocast keeps f32 (the bf16 rule)");
  }
  const auto cast =
      autocast_inputs(keep_f32 ? AutocastPolicy::float32 : AutocastPolicy::lower_precision, x_in,
                      weight_in, bias_in);
  const Tensor &x = cast[0], &weight = cast[1], &bias = cast[2];
  check_same_float(op, {x, weight, bias});
  RG_CHECK(x.dim() == N + 2, op, ": input must be ", N + 2, "-D (N, C, ", kConvAxes<N>, "), got ",
           x.describe());
  RG_CHECK(weight.dim() == N + 2, op, ": weight must be ", N + 2, "-D (O, C/groups, ",
           kConvKernelAxes<N>, "), got ", weight.describe());
  RG_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)), op,
           ": bias must be 1-D with ", weight.size(0), " elements (weight ", weight.describe(),
           "), got ", bias.describe());
  Tensor y = conv_forward<N>(x, weight, bias, p);
  if (needs_grad({x, weight, bias})) {
    const detail::ConvGradsNeeded need = detail::conv_grads_needed(x, weight, bias);
    // x is kept only when the weight needs a gradient, the weight only when x does.
    record_backward(N == 2 ? "Conv2dBackward" : "Conv3dBackward",
                    detail::conv_inputs(x, weight, bias), y,
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

#define RG_CONV_RANK(N)                                                               \
  template Tensor conv_forward<N>(const Tensor&, const Tensor&, const Tensor&,        \
                                  const ConvParams<N>&);                              \
  template Tensor conv_backward_data<N>(const Tensor&, const Tensor&, const Shape&,   \
                                        const ConvParams<N>&);                        \
  template Tensor conv_backward_weight<N>(const Tensor&, const Tensor&, const Shape&, \
                                          const ConvParams<N>&);                      \
  template Tensor conv_backward_bias<N>(const Tensor&);                               \
  template Tensor convolution<N>(const Tensor&, const Tensor&, const Tensor&, const ConvParams<N>&);
RG_CONV_RANK(2)
RG_CONV_RANK(3)
#undef RG_CONV_RANK

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Conv2dPair stride,
              Conv2dPair padding, Conv2dPair dilation, int64_t groups) {
  return convolution<2>(x, weight, bias, Conv2dParams{stride, padding, dilation, groups});
}

Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, Conv3dTriple stride,
              Conv3dTriple padding, Conv3dTriple dilation, int64_t groups) {
  return convolution<3>(x, weight, bias, Conv3dParams{stride, padding, dilation, groups});
}

}  // namespace rg
