#pragma once
// conv3d's CPU kernels (conv3d_cpu.cpp: vol2col + Eigen GEMMs), which the convolutions' front
// end (ops/conv) calls through ConvCpuKernels<3> (ops/conv/conv_kernel.h).

#include "core/dispatch.h"
#include "ops/conv/conv_params.h"

namespace rg {

Tensor conv3d_forward(OnCpu, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv3dParams& p);
Tensor conv3d_backward_data(OnCpu, const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                            const Conv3dParams& p);
Tensor conv3d_backward_weight(OnCpu, const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                              const Conv3dParams& p);
Tensor conv3d_backward_bias(OnCpu, const Tensor& gy);

}  // namespace rg
