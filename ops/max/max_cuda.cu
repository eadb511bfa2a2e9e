// max on the GPU: the kernels of max_kernels.cuh on the current stream, and the elementwise
// engine's kernel for the functor MaxAllGradFn (which the CPU loop applies too).
#include "core/cuda/stream.h"
#include "ops/elementwise/elementwise_cuda.cuh"
#include "ops/max/max_kernel.h"
#include "ops/max/max_kernels.cuh"

RG_POINTWISE_CUDA(rg::MaxAllGradFn, 3);

namespace rg::detail {

Tensor max_all(OnCuda, const Tensor& x) {
  Tensor y = empty({}, {x.dtype(), x.device()});
  cuda::DeviceGuard guard(x.device().index);
  launch_max_all(x, y, cuda::current_stream(x.device().index));
  return y;
}

MaxResult max_along(OnCuda, const Tensor& x, int64_t dim, const Shape& out_shape) {
  MaxResult r{empty(out_shape, {x.dtype(), x.device()}),
              empty(out_shape, {DType::i64, x.device()})};
  cuda::DeviceGuard guard(x.device().index);
  launch_max_along(x, r.values, r.indices, lanes_around(x.shape(), dim),
                   cuda::current_stream(x.device().index));
  return r;
}

Tensor max_all_backward(OnCuda, const Tensor& gy, const Tensor& x_in, const Tensor& y) {
  const Tensor x = x_in.contiguous();
  Tensor gx = empty(x.shape(), {x.dtype(), x.device()});
  cuda::DeviceGuard guard(x.device().index);
  launch_max_all_backward(gy, x, y, gx, cuda::current_stream(x.device().index));
  return gx;
}

Tensor max_along_backward(OnCuda, const Tensor& gy, const Tensor& indices, const Shape& x_shape,
                          int64_t dim) {
  Tensor gx = empty(x_shape, {gy.dtype(), gy.device()});
  cuda::DeviceGuard guard(gy.device().index);
  launch_max_along_backward(gy.contiguous(), indices, gx, lanes_around(x_shape, dim),
                            cuda::current_stream(gy.device().index));
  return gx;
}

}  // namespace rg::detail
