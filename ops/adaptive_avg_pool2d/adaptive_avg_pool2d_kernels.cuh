#pragma once
// adaptive_avg_pool2d on the GPU. Forward: a thread per output sums its bin. The sum is in
// double, as on the CPU: global pooling sums a whole plane, and float's error would grow with
// H·W; the kernel reads each input about once, so it is memory-bound and double adds cost
// little. Backward gathers: a thread per input element sums gy / area over the bins that hold
// it (at most two per dim when bins overlap, more when OH > H), in the order of the outputs —
// deterministic, no atomics, and in f32/f64 bit-equal to the CPU's scatter, which adds the same
// terms in the same order; 16-bit gradients are summed in float and rounded once.

#include "core/cuda/kernel.h"
#include "ops/adaptive_avg_pool2d/adaptive_avg_pool2d_kernel.h"
#include "ops/adaptive_avg_pool2d/adaptive_bins.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace adaptive_avg_pool2d_cuda {

// Planes of the input (h, w) and the output (oh, ow); `planes` = N·C.
struct Sizes {
  int64_t planes, h, w, oh, ow;
};

template <class T, class C>
__global__ void forward_kernel(const T* x, T* y, Sizes s) {
  using detail::bin_end;
  using detail::bin_start;
  const int64_t n = s.planes * s.oh * s.ow;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ow = i % s.ow, oh = i / s.ow % s.oh, plane = i / (s.ow * s.oh);
    const T* xp = x + plane * s.h * s.w;
    const int64_t h0 = bin_start(oh, s.h, s.oh), h1 = bin_end(oh, s.h, s.oh);
    const int64_t w0 = bin_start(ow, s.w, s.ow), w1 = bin_end(ow, s.w, s.ow);
    double sum = 0;
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw)
        sum += static_cast<double>(static_cast<C>(xp[ih * s.w + iw]));
    y[i] = T(static_cast<C>(sum / static_cast<double>((h1 - h0) * (w1 - w0))));
  }
}

template <class T, class C>
__global__ void backward_kernel(const T* gy, T* gx, Sizes s) {
  using detail::bin_end;
  using detail::bin_start;
  const int64_t n = s.planes * s.h * s.w;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t iw = i % s.w, ih = i / s.w % s.h, plane = i / (s.w * s.h);
    const T* gyp = gy + plane * s.oh * s.ow;
    const int64_t oh0 = detail::first_bin_holding(ih, s.h, s.oh);
    const int64_t oh1 = detail::last_bin_holding(ih, s.h, s.oh);
    const int64_t ow0 = detail::first_bin_holding(iw, s.w, s.ow);
    const int64_t ow1 = detail::last_bin_holding(iw, s.w, s.ow);
    C sum = 0;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      const int64_t bin_h = bin_end(oh, s.h, s.oh) - bin_start(oh, s.h, s.oh);
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t bin_w = bin_end(ow, s.w, s.ow) - bin_start(ow, s.w, s.ow);
        sum += static_cast<C>(gyp[oh * s.ow + ow]) / static_cast<C>(bin_h * bin_w);
      }
    }
    gx[i] = T(sum);
  }
}

}  // namespace adaptive_avg_pool2d_cuda

// y (N, C, OH, OW) from x contiguous (N, C, H, W).
inline void launch_adaptive_avg_pool2d(const Tensor& x, const Tensor& y, cudaStream_t stream) {
  const int64_t n = y.numel();
  if (n == 0) return;
  const adaptive_avg_pool2d_cuda::Sizes s{x.size(0) * x.size(1), x.size(2), x.size(3), y.size(2),
                                          y.size(3)};
  dispatch_floating(x.dtype(), "adaptive_avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(adaptive_avg_pool2d_cuda::forward_kernel<T, compute_t<T>>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(x.data_ptr()),
                 static_cast<T*>(y.data_ptr()), s);
  });
}

// gx (N, C, H, W), every element written, from gy contiguous (N, C, OH, OW).
inline void launch_adaptive_avg_pool2d_backward(const Tensor& gy, const Tensor& gx,
                                                cudaStream_t stream) {
  const int64_t n = gx.numel();
  if (n == 0) return;
  const adaptive_avg_pool2d_cuda::Sizes s{gx.size(0) * gx.size(1), gx.size(2), gx.size(3),
                                          gy.size(2), gy.size(3)};
  dispatch_floating(gy.dtype(), "adaptive_avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(adaptive_avg_pool2d_cuda::backward_kernel<T, compute_t<T>>,
                 dim3(cuda::grid_for(n)), dim3(cuda::kBlockThreads), 0, stream,
                 static_cast<const T*>(gy.data_ptr()), static_cast<T*>(gx.data_ptr()), s);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
