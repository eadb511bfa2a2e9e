#pragma once
// conv2d's CPU kernels (conv2d_cpu.cpp: im2col + Eigen GEMMs, the direct and Winograd kernels),
// which ops/conv's rank-generic front end calls through ConvCpuKernels<2>.

#include "core/dispatch.h"
#include "ops/conv2d/conv2d.h"

namespace rg {

Tensor conv2d_forward(OnCpu, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& p);
Tensor conv2d_backward_data(OnCpu, const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                            const Conv2dParams& p);
Tensor conv2d_backward_weight(OnCpu, const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                              const Conv2dParams& p);
Tensor conv2d_backward_bias(OnCpu, const Tensor& gy);

// The 2-D names of ops/conv's kernels by device, which this folder's kernels call (the f16
// path widens and calls back; backward-data runs as a forward of the flipped kernel).
inline Shape conv2d_output_shape(std::string_view op, const Shape& x_shape,
                                 const Shape& weight_shape, const Conv2dParams& p) {
  return conv_output_shape<2>(op, x_shape, weight_shape, p);
}
inline Tensor conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                             const Conv2dParams& p) {
  return conv_forward<2>(x, weight, bias, p);
}
inline Tensor conv2d_backward_data(const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                                   const Conv2dParams& p) {
  return conv_backward_data<2>(gy, weight, x_shape, p);
}
inline Tensor conv2d_backward_weight(const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                                     const Conv2dParams& p) {
  return conv_backward_weight<2>(gy, x, weight_shape, p);
}

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
};

}  // namespace rg
