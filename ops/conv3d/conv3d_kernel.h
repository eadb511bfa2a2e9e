#pragma once
// conv3d's CPU kernels (conv3d_cpu.cpp: vol2col + Eigen GEMMs), which ops/conv's rank-generic
// front end calls through ConvCpuKernels<3>.

#include "core/dispatch.h"
#include "ops/conv3d/conv3d.h"

namespace rg {

Tensor conv3d_forward(OnCpu, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv3dParams& p);
Tensor conv3d_backward_data(OnCpu, const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                            const Conv3dParams& p);
Tensor conv3d_backward_weight(OnCpu, const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                              const Conv3dParams& p);
Tensor conv3d_backward_bias(OnCpu, const Tensor& gy);

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
};

}  // namespace rg
