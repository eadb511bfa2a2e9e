// max_pool2d on the GPU: the kernels of max_pool2d_kernels.cuh on the current stream.
#include "core/cuda/stream.h"
#include "ops/max_pool2d/max_pool2d_kernels.cuh"
#include "ops/max_pool2d/max_pool2d_nhwc_kernels.cuh"

namespace rg::detail {

void max_pool2d_forward(OnCuda, const Tensor& x, const Pool2dGeometry& g, const Tensor& output,
                        const Tensor& indices) {
  cuda::DeviceGuard guard(x.device().index);
  launch_max_pool2d(x, g, output, indices, cuda::current_stream(x.device().index));
}

Tensor max_pool2d_backward(OnCuda, const Tensor& gy, const Tensor& indices,
                           const Pool2dGeometry& g) {
  Tensor gx = empty({g.n, g.c, g.h, g.w}, {gy.dtype(), gy.device()});
  cuda::DeviceGuard guard(gy.device().index);
  launch_max_pool2d_backward(gy, indices, g, gx, cuda::current_stream(gy.device().index));
  return gx;
}

void max_pool2d_forward_nhwc(OnCuda, const Tensor& x, const Pool2dGeometry& g, const Tensor& output,
                             const Tensor& indices) {
  cuda::DeviceGuard guard(x.device().index);
  launch_max_pool2d_nhwc(x, g, output, indices, cuda::current_stream(x.device().index));
}

Tensor max_pool2d_backward_nhwc(OnCuda, const Tensor& gy, const Tensor& indices,
                                const Pool2dGeometry& g) {
  Tensor gx = empty({g.n, g.c, g.h, g.w}, {gy.dtype(), gy.device()}, MemoryFormat::channels_last);
  cuda::DeviceGuard guard(gy.device().index);
  launch_max_pool2d_backward_nhwc(gy, indices, g, gx, cuda::current_stream(gy.device().index));
  return gx;
}

}  // namespace rg::detail
