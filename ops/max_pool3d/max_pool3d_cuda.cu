// max_pool3d on the GPU: the kernels of max_pool3d_kernels.cuh on the current stream.
#include "core/cuda/stream.h"
#include "ops/max_pool3d/max_pool3d_kernels.cuh"

namespace rg::detail {

void max_pool3d_forward(OnCuda, const Tensor& x, const Pool3dGeometry& g, const Tensor& output,
                        const Tensor& indices) {
  cuda::DeviceGuard guard(x.device().index);
  launch_max_pool3d(x, g, output, indices, cuda::current_stream(x.device().index));
}

Tensor max_pool3d_backward(OnCuda, const Tensor& gy, const Tensor& indices,
                           const Pool3dGeometry& g) {
  Tensor gx = empty({gy.size(0), gy.size(1), g.in[0], g.in[1], g.in[2]}, {gy.dtype(), gy.device()});
  cuda::DeviceGuard guard(gy.device().index);
  launch_max_pool3d_backward(gy, indices, g, gx, cuda::current_stream(gy.device().index));
  return gx;
}

}  // namespace rg::detail
