// upsample on the GPU: the kernels of upsample_kernels.cuh on the current stream.
#include "core/cuda/stream.h"
#include "ops/upsample/upsample_kernels.cuh"

namespace rg::detail {

void upsample_forward(OnCuda, const Tensor& x, int64_t scale, UpsampleMode mode, AlignCorners align,
                      const Tensor& y) {
  cuda::DeviceGuard guard(x.device().index);
  launch_upsample(x, scale, mode, align, y, cuda::current_stream(x.device().index));
}

Tensor upsample_backward(OnCuda, const Tensor& gy, const Shape& input_shape, int64_t scale,
                         UpsampleMode mode, AlignCorners align) {
  Tensor gx = empty(input_shape, {gy.dtype(), gy.device()});
  cuda::DeviceGuard guard(gy.device().index);
  launch_upsample_backward(gy, scale, mode, align, gx, cuda::current_stream(gy.device().index));
  return gx;
}

void upsample3d_forward(OnCuda, const Tensor& x, int64_t scale, UpsampleMode mode,
                        AlignCorners align, const Tensor& y) {
  cuda::DeviceGuard guard(x.device().index);
  launch_upsample3d(x, scale, mode, align, y, cuda::current_stream(x.device().index));
}

Tensor upsample3d_backward(OnCuda, const Tensor& gy, const Shape& input_shape, int64_t scale,
                           UpsampleMode mode, AlignCorners align) {
  Tensor gx = empty(input_shape, {gy.dtype(), gy.device()});
  cuda::DeviceGuard guard(gy.device().index);
  launch_upsample3d_backward(gy, scale, mode, align, gx, cuda::current_stream(gy.device().index));
  return gx;
}

}  // namespace rg::detail
