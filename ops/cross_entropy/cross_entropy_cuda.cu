// The fused cross_entropy on the GPU: the kernels of cross_entropy_kernels.cuh on the current
// stream.
#include "core/cuda/stream.h"
#include "ops/cross_entropy/cross_entropy_kernels.cuh"

namespace rg::detail {

CrossEntropyForward cross_entropy_forward(OnCuda, const Tensor& logits, const Tensor& target,
                                          const Tensor& weight, const CrossEntropyArgs& args) {
  cuda::DeviceGuard guard(logits.device().index);
  return launch_cross_entropy(logits.contiguous(), target.contiguous(),
                              weight.defined() ? weight.contiguous() : Tensor(), args,
                              cuda::current_stream(logits.device().index));
}

Tensor cross_entropy_backward(OnCuda, const Tensor& gy, const Tensor& logits, const Tensor& target,
                              const Tensor& weight, const Tensor& lse, const CrossEntropyArgs& args,
                              const Tensor& total_weight) {
  Tensor gx = empty(logits.shape(), {logits.dtype(), logits.device()});
  cuda::DeviceGuard guard(logits.device().index);
  launch_cross_entropy_backward(gy.contiguous(), logits.contiguous(), target.contiguous(),
                                weight.defined() ? weight.contiguous() : Tensor(), lse,
                                total_weight, gx, args,
                                cuda::current_stream(logits.device().index));
  return gx;
}

}  // namespace rg::detail
