// sum and mean on the GPU: the reductions of core/cuda/reduce_kernels.cuh (the
// autograd engine's sum_to_shape runs the same kernel). Their backward is the pointwise
// MulScalarFn, built in ops/mul/mul_cuda.cu.
#include "core/cuda/reduce_kernels.cuh"
#include "core/cuda/stream.h"
#include "ops/sum/sum_kernel.h"

namespace rg::detail {

Tensor sum_reduce(OnCuda, const Tensor& x, const ReducePlan& plan, double scale) {
  Tensor out = empty(plan.out_shape, {x.dtype(), x.device()});
  cuda::DeviceGuard guard(x.device().index);
  launch_sum("sum", x, plan.reduced, out, scale, cuda::current_stream(x.device().index));
  return out;
}

}  // namespace rg::detail
