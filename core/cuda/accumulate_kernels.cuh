#pragma once
// Gradient accumulation on the GPU, acc += g, for the autograd engine (core/autograd.cpp):
// the sum of two gradients reaching one node, and a leaf's .grad += the new gradient.
// Same shape; any strides (a gradient may be a broadcast or transposed view).

#include "core/cuda/kernel.h"
#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg {
namespace accumulate_cuda {

inline constexpr int kMaxDims = 8;

struct Strides {
  int dims = 0;
  int64_t sizes[kMaxDims] = {}, acc[kMaxDims] = {}, g[kMaxDims] = {};
};

template <class T>
__global__ void contiguous_kernel(T* acc, const T* g, int64_t n) {
  using C = compute_t<T>;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    acc[i] = T(static_cast<C>(acc[i]) + static_cast<C>(g[i]));
}

template <class T>
__global__ void strided_kernel(T* acc, const T* g, Strides s, int64_t n) {
  using C = compute_t<T>;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = i, oa = 0, og = 0;
    for (int d = s.dims - 1; d >= 0; --d) {
      const int64_t coord = rest % s.sizes[d];
      rest /= s.sizes[d];
      oa += coord * s.acc[d];
      og += coord * s.g[d];
    }
    acc[oa] = T(static_cast<C>(acc[oa]) + static_cast<C>(g[og]));
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
    if (acc.is_contiguous() && g.is_contiguous()) {
      cuda::launch(ac::contiguous_kernel<T>, dim3(blocks), dim3(cuda::kBlockThreads), 0, stream, a,
                   b, n);
      return;
    }
    RG_CHECK(acc.dim() <= ac::kMaxDims, "gradient accumulation: at most ", ac::kMaxDims,
             " dims for strided gradients on the GPU, got ", acc.describe());
    ac::Strides s;
    s.dims = static_cast<int>(acc.dim());
    for (int d = 0; d < s.dims; ++d) {
      s.sizes[d] = acc.shape()[d];
      s.acc[d] = acc.strides()[d];
      s.g[d] = g.strides()[d];
    }
    cuda::launch(ac::strided_kernel<T>, dim3(blocks), dim3(cuda::kBlockThreads), 0, stream, a, b, s,
                 n);
  });
}

}  // namespace rg
