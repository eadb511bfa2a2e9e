// adaptive_avg_pool2d on the GPU: the kernels of adaptive_avg_pool2d_kernels.cuh on the current
// stream.
#include "core/cuda/stream.h"
#include "ops/adaptive_avg_pool2d/adaptive_avg_pool2d_kernels.cuh"

namespace rg::detail {

void adaptive_avg_pool2d_forward(OnCuda, const Tensor& x, const Tensor& y) {
  cuda::DeviceGuard guard(x.device().index);
  launch_adaptive_avg_pool2d(x, y, cuda::current_stream(x.device().index));
}

Tensor adaptive_avg_pool2d_backward(OnCuda, const Tensor& gy, const Shape& input_shape) {
  Tensor gx = empty(input_shape, {gy.dtype(), gy.device()});
  cuda::DeviceGuard guard(gy.device().index);
  launch_adaptive_avg_pool2d_backward(gy, gx, cuda::current_stream(gy.device().index));
  return gx;
}

}  // namespace rg::detail
