#pragma once
// The convolution kernels of rank N by backend, for the front end's dispatch (conv.cpp,
// transpose/): on the CPU the rank's own kernels (ConvCpuKernels<N>, from conv2d/ and conv3d/),
// on a GPU cuDNN's N-d graphs for every rank (conv_cuda.cu).

#include <optional>

#include "core/dispatch.h"
#include "ops/conv/conv2d/conv2d_kernel.h"
#include "ops/conv/conv3d/conv3d_kernel.h"
#include "ops/conv/conv3d/conv3d_tiles.h"
#include "ops/conv/conv_params.h"

namespace rg {

// The CPU kernels of rank N, without autograd: forward, backward-data, backward-weight and
// backward-bias, and backward_data_bf16 — bf16 backward-data with a bias added in f32 before the
// one rounding (the transposed convolution's forward), or nullopt where the rank's bf16 kernels
// do not take the problem; for rank 2, bf16_autocast_keeps_f32 — whether autocast in bf16 leaves
// the convolution in f32, where the f32 kernels are the faster (conv2d's rule; conv3d keeps its
// bf16 tile GEMM, not yet measured against f32 on AVX512-BF16).
template <int N>
struct ConvCpuKernels;

template <>
struct ConvCpuKernels<2> {
  static Tensor forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p) {
    return conv2d_forward(OnCpu{}, x, w, b, p);
  }
  static Tensor backward_data(const Tensor& gy, const Tensor& w, const Shape& x_shape,
                              const Conv2dParams& p) {
    return conv2d_backward_data(OnCpu{}, gy, w, x_shape, p);
  }
  static Tensor backward_weight(const Tensor& gy, const Tensor& x, const Shape& w_shape,
                                const Conv2dParams& p) {
    return conv2d_backward_weight(OnCpu{}, gy, x, w_shape, p);
  }
  static Tensor backward_bias(const Tensor& gy) { return conv2d_backward_bias(OnCpu{}, gy); }
  static std::optional<Tensor> backward_data_bf16(const Tensor& gy, const Tensor& w,
                                                  const Shape& x_shape, const Conv2dParams& p,
                                                  const Tensor& bias) {
    return conv2d_backward_data_tiles(gy, w, x_shape, p, bias);
  }
  static bool bf16_autocast_keeps_f32(const Shape& x, const Shape& w, const Conv2dParams& p) {
    return conv2d_bf16_autocast_keeps_f32(x, w, p);
  }
};

template <>
struct ConvCpuKernels<3> {
  static Tensor forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv3dParams& p) {
    return conv3d_forward(OnCpu{}, x, w, b, p);
  }
  static Tensor backward_data(const Tensor& gy, const Tensor& w, const Shape& x_shape,
                              const Conv3dParams& p) {
    return conv3d_backward_data(OnCpu{}, gy, w, x_shape, p);
  }
  static Tensor backward_weight(const Tensor& gy, const Tensor& x, const Shape& w_shape,
                                const Conv3dParams& p) {
    return conv3d_backward_weight(OnCpu{}, gy, x, w_shape, p);
  }
  static Tensor backward_bias(const Tensor& gy) { return conv3d_backward_bias(OnCpu{}, gy); }
  static std::optional<Tensor> backward_data_bf16(const Tensor& gy, const Tensor& w,
                                                  const Shape& x_shape, const Conv3dParams& p,
                                                  const Tensor& bias) {
    return conv3d_backward_data_tiles(gy, w, x_shape, p, bias);
  }
};

template <int N>
Tensor conv_forward(OnCuda, const Tensor& x, const Tensor& weight, const Tensor& bias,
                    const ConvParams<N>& p);
template <int N>
Tensor conv_backward_data(OnCuda, const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                          const ConvParams<N>& p);
template <int N>
Tensor conv_backward_weight(OnCuda, const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                            const ConvParams<N>& p);
template <int N>
Tensor conv_backward_bias(OnCuda, const Tensor& gy);

}  // namespace rg
