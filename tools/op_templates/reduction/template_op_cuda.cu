// The CUDA side of template_op: the OnCuda overloads that dispatch_device calls in template_op.cpp.
// The kernels live in template_op_kernels.cuh, which the emulator tests also compile.
#include "core/cuda/stream.h"
#include "ops/template_op/template_op_cuda.h"
#include "ops/template_op/template_op_kernels.cuh"

namespace rg {

Tensor template_op_forward(OnCuda, const Tensor& x, int64_t rows, int64_t cols) {
  const Shape& s = x.shape();
  Tensor y = empty(Shape(s.begin(), s.end() - 1), {x.dtype(), x.device()});
  cuda::DeviceGuard guard(x.device().index);
  launch_template_op_forward(y, x, rows, cols, cuda::current_stream(x.device().index));
  return y;
}

Tensor template_op_backward(OnCuda, const Tensor& gy, const Tensor& x, int64_t rows, int64_t cols) {
  Tensor gx = empty(x.shape(), {x.dtype(), x.device()});
  cuda::DeviceGuard guard(x.device().index);
  launch_template_op_backward(gx, gy, x, rows, cols, cuda::current_stream(x.device().index));
  return gx;
}

}  // namespace rg
