#pragma once
// conv3d's kernels per backend: vol2col + Eigen GEMMs on the CPU (conv3d_cpu.cpp), cuDNN's N-d
// convolution graphs on the GPU (conv3d_cuda.cu).

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

Tensor conv3d_forward(OnCuda, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv3dParams& p);
Tensor conv3d_backward_data(OnCuda, const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                            const Conv3dParams& p);
Tensor conv3d_backward_weight(OnCuda, const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                              const Conv3dParams& p);
Tensor conv3d_backward_bias(OnCuda, const Tensor& gy);

}  // namespace rg
