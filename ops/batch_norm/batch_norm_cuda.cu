// batch_norm on the GPU: the kernels of batch_norm_kernels.cuh on the current stream.
#include "core/cuda/stream.h"
#include "ops/batch_norm/batch_norm_kernels.cuh"

namespace rg::detail {

BnForward bn_forward(OnCuda, const Tensor& x, const Tensor& weight, const Tensor& bias,
                     const Tensor& running_mean, const Tensor& running_var,
                     const BnConfig& config) {
  cuda::DeviceGuard guard(x.device().index);
  return launch_bn_forward(x, weight.defined() ? weight.contiguous() : Tensor(),
                           bias.defined() ? bias.contiguous() : Tensor(), running_mean, running_var,
                           config, cuda::current_stream(x.device().index));
}

BnBackward bn_backward(OnCuda, const Tensor& gy, const Tensor& x, const Tensor& weight,
                       const Tensor& mean, const Tensor& invstd, bool train, BnWants wants,
                       DType param_dtype) {
  cuda::DeviceGuard guard(x.device().index);
  return launch_bn_backward(gy, x, weight.defined() ? weight.contiguous() : Tensor(), mean, invstd,
                            train, wants, param_dtype, cuda::current_stream(x.device().index));
}

}  // namespace rg::detail
