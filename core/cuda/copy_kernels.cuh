#pragma once
// Copies on one GPU with any strides and any dtype pair: dst = convert<D>(src) elementwise, the
// same conversion (core/dtype.h convert, rounding to nearest even into 16 bits) the CPU copy
// applies. Makes contiguous(), to(dtype), cat and split stay on the device instead of going
// through the host. And fill_, the one other kernel of core/copy.cpp.

#include "core/cuda/kernel.h"
#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace copy_cuda {

template <class D, class S>
__global__ void contiguous_kernel(D* dst, const S* src, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = convert<D>(src[i]);
}

template <class D, class S>
__global__ void strided_kernel(D* dst, const S* src, cuda::StridedGeometry<2> geometry, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t at[2];
    cuda::strided_offsets(i, geometry, at);
    dst[at[0]] = convert<D>(src[at[1]]);
  }
}

template <class T>
__global__ void fill_kernel(T* out, int64_t n, T value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = value;
}

}  // namespace copy_cuda

// out[0..n) = value converted to `dtype` (contiguous device memory; host memory under the
// emulator).
inline void launch_fill(void* out, DType dtype, int64_t n, double value, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(copy_cuda::fill_kernel<T>, dim3(cuda::grid_for(n)), dim3(cuda::kBlockThreads), 0,
                 stream, static_cast<T*>(out), n, convert<T>(value));
  });
}

// dst = src (same shape; both in one device's memory, host memory under the emulator).
inline void launch_copy(const Tensor& dst, const Tensor& src, cudaStream_t stream) {
  namespace cc = copy_cuda;
  RG_CHECK(dst.shape() == src.shape(), "copy: shape mismatch, ", dst.describe(), " <- ",
           src.describe());
  const int64_t n = dst.numel();
  if (n == 0) return;
  const unsigned blocks = cuda::grid_for(n);
  dispatch_all(dst.dtype(), [&](auto dst_tag) {
    dispatch_all(src.dtype(), [&](auto src_tag) {
      using D = decltype(dst_tag);
      using S = decltype(src_tag);
      D* d = static_cast<D*>(dst.data_ptr());
      const S* s = static_cast<const S*>(src.data_ptr());
      if (dst.is_contiguous() && src.is_contiguous()) {
        cuda::launch(cc::contiguous_kernel<D, S>, dim3(blocks), dim3(cuda::kBlockThreads), 0,
                     stream, d, s, n);
        return;
      }
      const auto geometry =
          cuda::strided_geometry<2>("copy", dst.shape(), {dst.strides(), src.strides()});
      cuda::launch(cc::strided_kernel<D, S>, dim3(blocks), dim3(cuda::kBlockThreads), 0, stream, d,
                   s, geometry, n);
    });
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
