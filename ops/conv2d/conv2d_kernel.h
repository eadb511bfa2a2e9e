#pragma once
// conv2d's kernels per backend: Eigen/direct kernels on the CPU (conv2d_cpu.cpp), cuDNN on a
// GPU (conv2d_cuda.cu). The public entry points of conv2d.h dispatch to these by device.

#include "core/dispatch.h"
#include "ops/conv2d/conv2d.h"

namespace rg {

Tensor conv2d_forward(OnCpu, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& p);
Tensor conv2d_forward(OnCuda, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& p);
Tensor conv2d_backward_data(OnCpu, const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                            const Conv2dParams& p);
Tensor conv2d_backward_data(OnCuda, const Tensor& gy, const Tensor& weight, const Shape& x_shape,
                            const Conv2dParams& p);
Tensor conv2d_backward_weight(OnCpu, const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                              const Conv2dParams& p);
Tensor conv2d_backward_weight(OnCuda, const Tensor& gy, const Tensor& x, const Shape& weight_shape,
                              const Conv2dParams& p);
Tensor conv2d_backward_bias(OnCpu, const Tensor& gy);
Tensor conv2d_backward_bias(OnCuda, const Tensor& gy);

}  // namespace rg
