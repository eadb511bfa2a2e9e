// softmax and log_softmax on the GPU: the lane kernels of softmax_kernels.cuh.
#include "core/cuda/stream.h"
#include "ops/softmax/softmax_kernels.cuh"

namespace rg::detail {

Tensor softmax_forward(OnCuda, const Tensor& x_in, int64_t dim, SoftmaxKind kind) {
  const Tensor x = x_in.contiguous();
  Tensor y = empty(x.shape(), {x.dtype(), x.device()});
  cuda::DeviceGuard guard(x.device().index);
  launch_softmax(x, y, dim, kind, cuda::current_stream(x.device().index));
  return y;
}

Tensor softmax_backward(OnCuda, const Tensor& gy_in, const Tensor& y_in, int64_t dim,
                        SoftmaxKind kind) {
  const Tensor gy = gy_in.contiguous(), y = y_in.contiguous();
  Tensor gx = empty(y.shape(), {y.dtype(), y.device()});
  cuda::DeviceGuard guard(y.device().index);
  launch_softmax_backward(gy, y, gx, dim, kind, cuda::current_stream(y.device().index));
  return gx;
}

}  // namespace rg::detail
