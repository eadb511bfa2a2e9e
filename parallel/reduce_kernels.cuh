#pragma once
// The collectives' elementwise steps on a GPU (the ring allreduce over NCCL): the functors of
// reduce_functors.h in a grid-stride kernel, so a GPU ring computes the bits the host ring
// does. Runs on the CPU under the kernel emulator (tests/kernels/collective_kernels_test.cpp).

#include "core/cuda/kernel.h"
#include "core/dispatch.h"
#include "parallel/reduce_functors.h"

namespace rg::parallel {
inline namespace RG_KERNEL_BUILD {
namespace reduce_cuda {

template <class T>
__global__ void combine_kernel(T* acc, const T* in, int64_t n, CombineFn<T> f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    acc[i] = f(acc[i], in[i]);
}

template <class T>
__global__ void divide_kernel(T* data, int64_t n, DivideFn<T> f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    data[i] = f(data[i]);
}

}  // namespace reduce_cuda

// acc[i] = acc[i] ⊕ in[i] on `stream` (device memory; host memory under the emulator).
inline void launch_combine(void* acc, const void* in, int64_t n, DType dtype, Combine how,
                           cudaStream_t stream) {
  if (n == 0) return;
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(reduce_cuda::combine_kernel<T>, dim3(cuda::grid_for(n)), dim3(cuda::kBlockThreads),
                 0, stream, static_cast<T*>(acc), static_cast<const T*>(in), n, CombineFn<T>{how});
  });
}

// data[i] /= divisor on `stream`.
inline void launch_divide(void* data, int64_t n, DType dtype, int64_t divisor,
                          cudaStream_t stream) {
  if (n == 0) return;
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(reduce_cuda::divide_kernel<T>, dim3(cuda::grid_for(n)), dim3(cuda::kBlockThreads),
                 0, stream, static_cast<T*>(data), n, DivideFn<T>{divisor});
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg::parallel
