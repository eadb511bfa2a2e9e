// The transposed convolutions, conv_transpose2d and conv_transpose3d (ops/conv/conv.h has the
// formulas): the checks, the forward as the convolution's backward-data plus the bias, and the
// backward node, whose gradients are the convolution's forward and backward-weight.
#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>

#include "core/autograd.h"
#include "core/thread_pool.h"
#include "ops/add/add.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/conv/conv.h"
#include "ops/conv/conv_grads.h"
#include "ops/conv/conv_kernel.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace {

// The convolution's forward computes every output its geometry allows; when output_padding >=
// stride (possible when dilation > stride) that is more than x has, and the extra ones go.
Tensor crop_to(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  Tensor c = t;
  for (int64_t a = 2; a < static_cast<int64_t>(shape.size()); ++a) c = c.narrow(a, 0, shape[a]);
  return c.contiguous();
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
Tensor convolution_transpose(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in,
                             const ConvParams<N>& p, const ConvSize<N>& output_padding) {
  constexpr std::string_view op = kConvTransposeName<N>;
  const auto cast = autocast_inputs(AutocastPolicy::lower_precision, x_in, weight_in, bias_in);
  const Tensor &x = cast[0], &weight = cast[1], &bias = cast[2];
  check_same_float(op, {x, weight, bias});
  RG_CHECK(x.dim() == N + 2, op, ": input must be ", N + 2, "-D (N, Ci, ", kConvAxes<N>, "), got ",
           x.describe());
  RG_CHECK(weight.dim() == N + 2, op, ": weight must be ", N + 2, "-D (Ci, Co/groups, ",
           kConvKernelAxes<N>, "), got ", weight.describe());
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
             conv_size_str<N>(p.stride), ", padding ", conv_size_str<N>(p.padding),
             ", output_padding ", conv_size_str<N>(output_padding), ", dilation ",
             conv_size_str<N>(p.dilation));
    RG_CHECK(output_padding[a] < p.stride[a] || output_padding[a] < p.dilation[a], op,
             ": output_padding ", conv_size_str<N>(output_padding),
             " must be smaller than the stride or the dilation");
    y_shape.push_back((x.size(2 + a) - 1) * p.stride[a] - 2 * p.padding[a] +
                      p.dilation[a] * (weight.size(2 + a) - 1) + output_padding[a] + 1);
    RG_CHECK(y_shape.back() >= 1, op, ": output size would be ", y_shape.back(),
             " (<= 0) for input ", x.describe(), " and weight ", weight.describe());
  }
  // The convolution this is the adjoint of maps (B, Co, T...) to (B, Ci, S...), weight as given.
  // f16/bf16 on the CPU: computed in f32, bias included, and rounded once at the end (as the
  // convolution does). cuDNN reads 16-bit operands itself and accumulates in f32.
  // bf16 on a CPU with AMX or AVX512-BF16: the rank's bf16 kernels (ConvCpuKernels<N>),
  // the bias added in f32 before the one rounding.
  std::optional<Tensor> tiles;
  if (x.device().is_cpu()) {
    const Tensor b = bias.defined() ? bias.detach() : Tensor();
    tiles = ConvCpuKernels<N>::backward_data_bf16(x.detach(), weight.detach(), y_shape, p, b);
  }
  const bool half =
      !tiles && x.device().is_cpu() && (x.dtype() == DType::f16 || x.dtype() == DType::bf16);
  auto wide = [&](const Tensor& t) { return half ? t.detach().to(DType::f32) : t.detach(); };
  Tensor y = tiles ? *tiles : conv_backward_data<N>(wide(x), wide(weight), y_shape, p);
  if (bias.defined() && !tiles) {
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
    const detail::ConvGradsNeeded need = detail::conv_grads_needed(x, weight, bias);
    // The convolution's roles swap: gx is its forward of gy (cropped where output_padding
    // reaches past what x has), gW its backward-weight with x as its "gy" and gy as its "x".
    record_backward(N == 2 ? "ConvTranspose2dBackward" : "ConvTranspose3dBackward",
                    detail::conv_inputs(x, weight, bias), y,
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

template Tensor convolution_transpose<2>(const Tensor&, const Tensor&, const Tensor&,
                                         const ConvParams<2>&, const ConvSize<2>&);
template Tensor convolution_transpose<3>(const Tensor&, const Tensor&, const Tensor&,
                                         const ConvParams<3>&, const ConvSize<3>&);

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        Conv2dPair stride, Conv2dPair padding, Conv2dPair output_padding,
                        int64_t groups, Conv2dPair dilation) {
  return convolution_transpose<2>(x, weight, bias, Conv2dParams{stride, padding, dilation, groups},
                                  output_padding);
}

Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        Conv3dTriple stride, Conv3dTriple padding, Conv3dTriple output_padding,
                        int64_t groups, Conv3dTriple dilation) {
  return convolution_transpose<3>(x, weight, bias, Conv3dParams{stride, padding, dilation, groups},
                                  output_padding);
}

}  // namespace rg
