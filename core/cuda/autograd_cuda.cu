// The autograd engine's two kernels on the GPU (see core/autograd.cpp): gradient accumulation
// and sum_to_shape, on the current stream of the tensors' device.
#include "core/cuda/accumulate_kernels.cuh"
#include "core/cuda/reduce_kernels.cuh"
#include "core/cuda/stream.h"

namespace rg {

void accumulate_into(OnCuda, const Tensor& acc, const Tensor& g) {
  cuda::DeviceGuard guard(acc.device().index);
  launch_accumulate(acc, g, cuda::current_stream(acc.device().index));
}

void sum_into(OnCuda, const Tensor& grad, const std::vector<bool>& reduced, const Tensor& out) {
  cuda::DeviceGuard guard(grad.device().index);
  launch_sum("sum_to_shape", grad, reduced, out, 1.0, cuda::current_stream(grad.device().index));
}

}  // namespace rg
