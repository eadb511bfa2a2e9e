#pragma once
// Gradient accumulation on the GPU, acc += g, for the autograd engine (core/autograd.cpp):
// the sum of two gradients reaching one node, and a leaf's .grad += the new gradient.
// Same shape; any strides (a gradient may be a broadcast or transposed view).

#include "core/cuda/kernel.h"
#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace accumulate_cuda {

template <class T>
__global__ void contiguous_kernel(T* acc, const T* g, int64_t n) {
  using C = compute_t<T>;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    acc[i] = T(static_cast<C>(acc[i]) + static_cast<C>(g[i]));
}

template <class T>
__global__ void strided_kernel(T* acc, const T* g, cuda::StridedGeometry<2> geometry, int64_t n) {
  using C = compute_t<T>;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t at[2];
    cuda::strided_offsets(i, geometry, at);
    acc[at[0]] = T(static_cast<C>(acc[at[0]]) + static_cast<C>(g[at[1]]));
  }
}

}  // namespace accumulate_cuda

// acc += g on `stream`. Shapes, dtypes and devices are checked by the caller. An `acc` that is a
// broadcast view (stride 0) would race; gradients are never such views.
inline void launch_accumulate(const Tensor& acc, const Tensor& g, cudaStream_t stream) {
  namespace ac = accumulate_cuda;
  const int64_t n = acc.numel();
  if (n == 0) return;
  dispatch_floating(acc.dtype(), "gradient accumulation", [&](auto tag) {
    using T = decltype(tag);
    T* a = static_cast<T*>(acc.data_ptr());
    const T* b = static_cast<const T*>(g.data_ptr());
    const unsigned blocks = cuda::grid_for(n);
    if (same_dense_layout(acc, g)) {  // both NCHW or both channels-last: a flat kernel
      cuda::launch(ac::contiguous_kernel<T>, dim3(blocks), dim3(cuda::kBlockThreads), 0, stream, a,
                   b, n);
      return;
    }
    const auto geometry = cuda::strided_geometry<2>("gradient accumulation", acc.shape(),
                                                    {acc.strides(), g.strides()});
    cuda::launch(ac::strided_kernel<T>, dim3(blocks), dim3(cuda::kBlockThreads), 0, stream, a, b,
                 geometry, n);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
