// The CUDA side of template_op: the OnCuda overloads that dispatch_device calls in template_op.cpp.
// The kernels live in template_op_kernels.cuh, which the emulator tests also compile.
#include "core/cuda/stream.h"
#include "ops/template_op/template_op_cuda.h"
#include "ops/template_op/template_op_kernels.cuh"

namespace rg {

Tensor template_op_forward(OnCuda, const Tensor& x) {
  Tensor y = empty(x.shape(), {x.dtype(), x.device()});
  cuda::DeviceGuard guard(x.device().index);
  launch_template_op_forward(y, x, cuda::current_stream(x.device().index));
  return y;
}

Tensor template_op_backward(OnCuda, const Tensor& gy, const Tensor& x) {
  Tensor gx = empty(x.shape(), {x.dtype(), x.device()});
  cuda::DeviceGuard guard(x.device().index);
  launch_template_op_backward(gx, gy, x, cuda::current_stream(x.device().index));
  return gx;
}

}  // namespace rg
