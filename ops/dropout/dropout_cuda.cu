// dropout on the GPU: the grid-stride kernels of dropout_kernels.cuh on the current stream.
#include "core/cuda/stream.h"
#include "ops/dropout/dropout_kernels.cuh"

namespace rg::detail {

void dropout_forward(OnCuda, const Tensor& x, const DropoutDraw& draw, const Tensor& mask,
                     const Tensor& y) {
  cuda::DeviceGuard guard(x.device().index);
  launch_dropout(x, draw, mask, y, cuda::current_stream(x.device().index));
}

void dropout_backward(OnCuda, const Tensor& gy, const Tensor& mask, double scale,
                      const Tensor& gx) {
  cuda::DeviceGuard guard(gy.device().index);
  launch_dropout_backward(gy, mask, scale, gx, cuda::current_stream(gy.device().index));
}

}  // namespace rg::detail
