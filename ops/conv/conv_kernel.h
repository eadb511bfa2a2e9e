#pragma once
// The convolution kernels of rank N by backend, for conv.cpp's dispatch: on the CPU the rank's
// own kernels (ConvCpuKernels<N>), on a GPU cuDNN's N-d graphs for every rank (conv_cuda.cu).

#include "core/dispatch.h"
#include "ops/conv/conv.h"

namespace rg {

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
