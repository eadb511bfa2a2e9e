#pragma once
// The convolutions: conv2d, conv3d, conv_transpose2d and conv_transpose3d, one op written once
// for N spatial dimensions (N = 2 images, N = 3 volumes). This header is their API; this folder
// holds the front end (conv.cpp: the checks, the dispatch by device, the backward node), the
// transposed convolution (transpose/), the GPU path (conv_cuda.cu over cudnn/), and beneath them
// the CPU kernels of each rank (conv2d/, conv3d/), which see only conv_params.h. README.md maps it.
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
//   (On the CPU, per image and group with col = im2col(x) (conv2d/im2col.h, conv3d/vol2col.h):
//   y = W · col, gx = col2im(Wᵀ · gy), gW = Σ_b gy · colᵀ — or the direct and Winograd kernels
//   that avoid the column matrix, conv2d/README.md.)
//
// The transposed convolution is the adjoint of the convolution with respect to its input
// ("deconvolution", learned upsampling: the 3-D UNet decoder's kernel 2, stride 2):
//   x: (B, Ci, S1..SN)   weight: (Ci, Co/G, k1..kN)   bias: (Co)   y: (B, Co, T1..TN)
//   Ta = (Sa − 1)·sa − 2·pa + da·(ka − 1) + opa + 1   (op = output_padding)
// Each input element scatters weight[ci]·x[b, ci, s] onto the output window at s·stride − p
// (dilated), so its forward is the convolution's backward-data, and its gradients are the
// convolution's forward (gx, cropped when output_padding ≥ stride) and backward-weight with the
// roles of x and gy swapped. output_padding only picks among the output sizes the convolution maps
// back to S: it adds elements at the far end of each axis, which receive only the bias; it must be
// smaller than the stride or the dilation.

#include "ops/conv/conv_params.h"

namespace rg {

// ---- the ops, with autograd -----------------------------------------------------------------
// Strides, paddings and dilations per axis (height, width; depth, height, width). f32, f64, and
// f16 / bf16 with f32 sums rounded once to 16 bits; autocast (O1) runs them in its 16-bit type.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Conv2dPair stride = {1, 1}, Conv2dPair padding = {0, 0}, Conv2dPair dilation = {1, 1},
              int64_t groups = 1);
Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Conv3dTriple stride = {1, 1, 1}, Conv3dTriple padding = {0, 0, 0},
              Conv3dTriple dilation = {1, 1, 1}, int64_t groups = 1);
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                        Conv2dPair stride = {1, 1}, Conv2dPair padding = {0, 0},
                        Conv2dPair output_padding = {0, 0}, int64_t groups = 1,
                        Conv2dPair dilation = {1, 1});
Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                        Conv3dTriple stride = {1, 1, 1}, Conv3dTriple padding = {0, 0, 0},
                        Conv3dTriple output_padding = {0, 0, 0}, int64_t groups = 1,
                        Conv3dTriple dilation = {1, 1, 1});

// The same for any rank, which the four above call (convolution_transpose: transpose/).
template <int N>
Tensor convolution(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const ConvParams<N>& p);
template <int N>
Tensor convolution_transpose(const Tensor& x, const Tensor& weight, const Tensor& bias,
                             const ConvParams<N>& p, const ConvSize<N>& output_padding);

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
