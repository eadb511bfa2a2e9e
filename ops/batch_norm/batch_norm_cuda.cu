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
                       DType param_dtype, const BnActSaved& fused) {
  cuda::DeviceGuard guard(x.device().index);
  return launch_bn_backward(gy, x, weight.defined() ? weight.contiguous() : Tensor(), mean, invstd,
                            train, wants, param_dtype, cuda::current_stream(x.device().index),
                            fused);
}

void bn_count(OnCuda, const Tensor& counter) {
  cuda::DeviceGuard guard(counter.device().index);
  launch_bn_count(counter, cuda::current_stream(counter.device().index));
}

void bn_stats(OnCuda, const Tensor& x, const Tensor& mean, const Tensor& m2) {
  cuda::DeviceGuard guard(x.device().index);
  launch_bn_stats(x, mean, m2, cuda::current_stream(x.device().index));
}

void bn_elemt(OnCuda, const Tensor& x, const Tensor& y, const Tensor& mean, const Tensor& scale,
              const Tensor& shift) {
  cuda::DeviceGuard guard(x.device().index);
  launch_bn_elemt(x, y, mean, scale, shift, cuda::current_stream(x.device().index));
}

void bn_backward_reduce(OnCuda, const Tensor& gy, const Tensor& x, const Tensor& mean,
                        const Tensor& sum_dy, const Tensor& sum_dy_xmu) {
  cuda::DeviceGuard guard(x.device().index);
  launch_bn_backward_reduce(gy, x, mean, sum_dy, sum_dy_xmu,
                            cuda::current_stream(x.device().index));
}

void bn_backward_elemt(OnCuda, const Tensor& gy, const Tensor& x, const Tensor& gx,
                       const Tensor& mean, const Tensor& k, const Tensor& a, const Tensor& b) {
  cuda::DeviceGuard guard(x.device().index);
  launch_bn_backward_elemt(gy, x, gx, mean, k, a, b, cuda::current_stream(x.device().index));
}

}  // namespace rg::detail
