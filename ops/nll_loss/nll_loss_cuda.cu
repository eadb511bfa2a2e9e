// nll_loss on the GPU: the kernels of nll_loss_kernels.cuh on the current stream.
#include "core/cuda/stream.h"
#include "ops/nll_loss/nll_loss_kernels.cuh"

namespace rg::detail {

ReducedLoss nll_loss_forward(OnCuda, const Tensor& x, const Tensor& target, const Tensor& weight,
                             const ClassTargetArgs& args) {
  cuda::DeviceGuard guard(x.device().index);
  return launch_nll_loss(x.contiguous(), target.contiguous(), weight, args,
                         cuda::current_stream(x.device().index));
}

Tensor nll_loss_backward(OnCuda, const Tensor& gy, const Tensor& target, const Tensor& weight,
                         const Shape& x_shape, const ClassTargetArgs& args,
                         const Tensor& total_weight) {
  Tensor gx = empty(x_shape, {gy.dtype(), gy.device()});
  cuda::DeviceGuard guard(gy.device().index);
  launch_nll_loss_backward(gy.contiguous(), target, weight, total_weight, gx, args,
                           cuda::current_stream(gy.device().index));
  return gx;
}

}  // namespace rg::detail
