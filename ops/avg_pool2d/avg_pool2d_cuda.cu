// avg_pool2d on the GPU: the kernels of avg_pool2d_kernels.cuh on the current stream.
#include "core/cuda/stream.h"
#include "ops/avg_pool2d/avg_pool2d_kernels.cuh"

namespace rg::detail {

void avg_pool2d_forward(OnCuda, const Tensor& x, const Pool2dGeometry& g, CountIncludePad count,
                        const Tensor& y) {
  cuda::DeviceGuard guard(x.device().index);
  launch_avg_pool2d(x, g, count, y, cuda::current_stream(x.device().index));
}

Tensor avg_pool2d_backward(OnCuda, const Tensor& gy, const Pool2dGeometry& g,
                           CountIncludePad count) {
  Tensor gx = empty({g.n, g.c, g.h, g.w}, {gy.dtype(), gy.device()});
  cuda::DeviceGuard guard(gy.device().index);
  launch_avg_pool2d_backward(gy, g, count, gx, cuda::current_stream(gy.device().index));
  return gx;
}

}  // namespace rg::detail
