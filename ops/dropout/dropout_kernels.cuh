#pragma once
// dropout on the GPU: one grid-stride kernel draws the mask and scales x, another applies a
// saved mask to the gradient. The mask comes from philox_uniform_f32 (core/philox.h), the same
// host/device function the CPU kernel calls, so for one (seed, offset) the GPU's mask equals
// the CPU's bit for bit (tests/kernels/dropout_kernels_test.cpp checks it).

#include "core/cuda/kernel.h"
#include "core/philox.h"
#include "ops/dropout/dropout_kernel.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace dropout_cuda {

template <class T, class C>
__global__ void forward_kernel(const T* x, uint8_t* mask, T* y, int64_t n, uint64_t seed,
                               uint64_t offset, float threshold, C scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const bool keep = philox_uniform_f32(seed, offset, static_cast<uint64_t>(i)) >= threshold;
    mask[i] = keep ? 1 : 0;
    y[i] = T(keep ? static_cast<C>(x[i]) * scale : C(0));
  }
}

template <class T, class C>
__global__ void apply_mask_kernel(const T* gy, const uint8_t* mask, T* gx, int64_t n, C scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    gx[i] = T(mask[i] ? static_cast<C>(gy[i]) * scale : C(0));
}

}  // namespace dropout_cuda

// mask (u8) and y = x · mask · scale; x, mask, y contiguous with the same numel.
inline void launch_dropout(const Tensor& x, const detail::DropoutDraw& draw, const Tensor& mask,
                           const Tensor& y, cudaStream_t stream) {
  const int64_t n = x.numel();
  if (n == 0) return;
  dispatch_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    cuda::launch(dropout_cuda::forward_kernel<T, C>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(x.data_ptr()),
                 static_cast<uint8_t*>(mask.data_ptr()), static_cast<T*>(y.data_ptr()), n,
                 draw.seed, draw.offset, draw.threshold, static_cast<C>(draw.scale));
  });
}

// gx = gy · mask · scale; all contiguous with the same numel.
inline void launch_dropout_backward(const Tensor& gy, const Tensor& mask, double scale,
                                    const Tensor& gx, cudaStream_t stream) {
  const int64_t n = gy.numel();
  if (n == 0) return;
  dispatch_floating(gy.dtype(), "dropout_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    cuda::launch(dropout_cuda::apply_mask_kernel<T, C>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 static_cast<const uint8_t*>(mask.data_ptr()), static_cast<T*>(gx.data_ptr()), n,
                 static_cast<C>(scale));
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
