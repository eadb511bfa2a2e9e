#pragma once
// conv2d: 2-D cross-correlation over a batch of images, as torch.nn.functional.conv2d.
//
//   x: (N, C, H, W)   weight: (O, C/G, kH, kW)   bias: (O) or undefined   y: (N, O, Ho, Wo)
//   G groups: input channels and output channels are split into G equal blocks; output block g
//   sees only input block g. With s = stride, p = padding, d = dilation (per axis):
//     y[n, o, ho, wo] = bias[o] + Σ_{c in group(o), i, j}
//                       weight[o, c − g·C/G, i, j] · x[n, c, ho·sH − pH + i·dH, wo·sW − pW + j·dW]
//     Ho = ⌊(H + 2·pH − dH·(kH − 1) − 1) / sH⌋ + 1   (Wo likewise), outside pixels read as 0.
//
// Backward (per image, per group; col = im2col(x), see ops/im2col):
//   forward          y   = W · col
//   backward-data    gx  = col2im(Wᵀ · gy)
//   backward-weight  gW  = Σ_n gy · colᵀ
//   backward-bias    gb  = Σ_{n, ho, wo} gy
// ops/conv_transpose2d is the adjoint and reuses these kernels with the roles swapped.

#include <array>
#include <string_view>

#include "core/tensor.h"

namespace rg {

using Conv2dPair = std::array<int64_t, 2>;  // {height, width}

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

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Conv2dPair stride = {1, 1}, Conv2dPair padding = {0, 0}, Conv2dPair dilation = {1, 1},
              int64_t groups = 1);

// ---- kernels (no autograd), for conv_transpose2d and apps/bench_ops ---------------------------
struct Conv2dParams {
  Conv2dPair stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};

// Checks x_shape (N, C, H, W) against weight_shape (O, C/G, kH, kW) and the params, naming `op`
// in errors; returns y's shape (N, O, Ho, Wo).
Shape conv2d_output_shape(std::string_view op, const Shape& x_shape, const Shape& weight_shape,
                          const Conv2dParams& p);

// y = conv2d(x, weight) + bias (bias may be undefined). cpu, any strides; f32 and f64, and f16 /
// bf16 computed in f32 and rounded once to 16 bits (all operands of one dtype).
Tensor conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& p);
// gx: (N, C, H, W) = x_shape, from gy: (N, O, Ho', Wo'). Ho' may be smaller than the Ho of
// x_shape (conv_transpose2d's output_padding): gx is then the adjoint of the conv restricted
// to the first Ho' × Wo' outputs.
Tensor conv2d_backward_data(const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                            const Conv2dParams& p);
// gW: (O, C/G, kH, kW) = weight_shape, from gy: (N, O, Ho', Wo') and x: (N, C, H, W).
Tensor conv2d_backward_weight(const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                              const Conv2dParams& p);
// gb: (O) = Σ over N, Ho, Wo of gy: (N, O, Ho, Wo).
Tensor conv2d_backward_bias(const Tensor& gy);

}  // namespace rg
