#pragma once
// The convolutions' front end, written once for N spatial dimensions: N = 2 is conv2d and
// conv_transpose2d, N = 3 conv3d and conv_transpose3d (their folders hold the public functions,
// which call the templates below). Here: the parameters, the checks and output shapes, the
// dispatch by device, the backward nodes, the transposed convolution as the adjoint, and the GPU
// path (cuDNN's N-d graphs, conv_cuda.cu). What stays per rank is the CPU kernels
// (ops/conv2d, ops/conv3d), which ConvCpuKernels<N> names.
//
//   x: (B, C, S1..SN)   weight: (O, C/G, k1..kN)   bias: (O) or undefined   y: (B, O, T1..TN)
//   G groups: input and output channels are split into G equal blocks; output block g sees only
//   input block g. With s = stride, p = padding, d = dilation, per axis a:
//     y[b, o, t] = bias[o] + Σ_{c in group(o), i} weight[o, c − g·C/G, i] · x[b, c, t·s − p + i·d]
//     Ta = ⌊(Sa + 2·pa − da·(ka − 1) − 1) / sa⌋ + 1; outside elements read as 0.
//   Backward:
//     backward-data    gx = the adjoint of x ↦ y applied to gy (a transposed convolution)
//     backward-weight  gW = Σ_b gy ⋆ x
//     backward-bias    gb = Σ of gy over b and every spatial axis
//
// The transposed convolution is the adjoint of the convolution with respect to its input:
//   x: (B, Ci, S1..SN)   weight: (Ci, Co/G, k1..kN)   bias: (Co)   y: (B, Co, T1..TN)
//   Ta = (Sa − 1)·sa − 2·pa + da·(ka − 1) + opa + 1   (op = output_padding)
// so its forward is the convolution's backward-data, and its gradients are the convolution's
// forward (gx, cropped when output_padding ≥ stride) and backward-weight with the roles of x and
// gy swapped. output_padding only picks among the output sizes the convolution maps back to S: it
// adds elements at the far end of each axis, which receive only the bias; it must be smaller than
// the stride or the dilation.

#include <array>
#include <string_view>

#include "core/tensor.h"

namespace rg {

template <int N>
using ConvSize = std::array<int64_t, N>;  // one value per spatial axis, outermost first

// The ops' names in errors.
template <int N>
inline constexpr std::string_view kConvName = N == 2 ? "conv2d" : "conv3d";
template <int N>
inline constexpr std::string_view kConvTransposeName =
    N == 2 ? "conv_transpose2d" : "conv_transpose3d";

template <int N>
constexpr ConvSize<N> same_on_every_axis(int64_t v) {
  ConvSize<N> s{};
  s.fill(v);
  return s;
}

template <int N>
struct ConvParams {
  ConvSize<N> stride = same_on_every_axis<N>(1), padding = same_on_every_axis<N>(0),
              dilation = same_on_every_axis<N>(1);
  int64_t groups = 1;
};

// The CPU kernels of rank N, without autograd: specialised by ops/conv2d/conv2d_kernel.h (N = 2)
// and ops/conv3d/conv3d_kernel.h (N = 3) with the rank's forward, backward-data, backward-weight
// and backward-bias.
template <int N>
struct ConvCpuKernels;

// Checks x_shape (B, C, S1..SN) against weight_shape (O, C/G, k1..kN) and the params, naming
// `op` in errors; returns y's shape (B, O, T1..TN).
template <int N>
Shape conv_output_shape(std::string_view op, const Shape& x_shape, const Shape& weight_shape,
                        const ConvParams<N>& p);

// ---- the kernels by device, without autograd (the transposed convolutions, bench_ops) -------
// y = conv(x, weight) + bias (bias may be undefined). Any strides; f32 and f64, and f16 / bf16
// with f32 sums rounded once to 16 bits (all operands of one dtype).
template <int N>
Tensor conv_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                    const ConvParams<N>& p);
// gx = x_shape, from gy: (B, O, T'...). T' may be smaller than the T of x_shape
// (output_padding of the transposed convolution): gx is then the adjoint of the convolution
// restricted to the first T' outputs of each axis.
template <int N>
Tensor conv_backward_data(const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                          const ConvParams<N>& p);
// gW = weight_shape, from gy: (B, O, T'...) and x.
template <int N>
Tensor conv_backward_weight(const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                            const ConvParams<N>& p);
// gb: (O), the sum of gy: (B, O, T...) over every axis but 1.
template <int N>
Tensor conv_backward_bias(const Tensor& gy);

// ---- the ops, with autograd ------------------------------------------------------------------
template <int N>
Tensor convolution(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const ConvParams<N>& p);
template <int N>
Tensor convolution_transpose(const Tensor& x, const Tensor& weight, const Tensor& bias,
                             const ConvParams<N>& p, const ConvSize<N>& output_padding);

// Deterministic convolutions (PyTorch's torch.backends.cudnn.deterministic): on a GPU, the
// cuDNN plans made afterwards use only engines that cuDNN does not mark nondeterministic (plans
// of the other mode stay cached under their own key). Process-wide, for every convolution op.
// The CPU convolutions are deterministic in either mode.
void set_deterministic_convolutions(bool deterministic);
bool deterministic_convolutions();

// Benchmarked convolutions (PyTorch's torch.backends.cudnn.benchmark): on a GPU, the first run
// of each convolution problem times cuDNN's candidate plans on the device and keeps the fastest
// for the problem; off (the default), the plan cuDNN's heuristics rank first. The choice depends
// on timings, so it can differ between runs: deterministic_convolutions() overrides it.
// Process-wide; the CPU convolutions ignore it.
void set_benchmark_convolutions(bool benchmark);
bool benchmark_convolutions();

}  // namespace rg
