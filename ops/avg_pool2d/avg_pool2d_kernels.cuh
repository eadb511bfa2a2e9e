#pragma once
// avg_pool2d on the GPU. Forward: a thread per output sums its clipped window in the compute
// type, as the CPU does. Backward gathers: a thread per input element walks the windows that
// cover it (at most ⌈KH/SH⌉·⌈KW/SW⌉), in the order of the outputs, and sums gy / divisor —
// deterministic, no atomics, and in f32/f64 bit-equal to the CPU's scatter, which adds the same
// terms in the same order; 16-bit gradients are summed in float and rounded once.

#include "core/cuda/kernel.h"
#include "ops/avg_pool2d/avg_pool2d_kernel.h"
#include "ops/avg_pool2d/avg_pool2d_window.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace avg_pool2d_cuda {

template <class T, class C>
__global__ void forward_kernel(const T* x, T* y, Pool2dGeometry g, CountIncludePad count) {
  const int64_t n = g.n * g.c * g.oh * g.ow;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.ow, oh = i / g.ow % g.oh, plane = i / (g.ow * g.oh);
    const T* xp = x + plane * g.h * g.w;
    const detail::AvgPoolWindow win = detail::avg_pool_window(g, count, oh, ow);
    if (win.h0 >= win.h1 || win.w0 >= win.w1) {
      y[i] = T(C(0));
      continue;
    }
    C sum = 0;
    for (int64_t ih = win.h0; ih < win.h1; ++ih)
      for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += static_cast<C>(xp[ih * g.w + iw]);
    y[i] = T(sum / static_cast<C>(win.divisor));
  }
}

// The outputs along one dim whose (unclipped) window [o·S − P, o·S − P + K) holds `in`:
// o from ⌈(in + P − K + 1) / S⌉ to ⌊(in + P) / S⌋, within [0, out). Clipping a window to the
// input never drops an input position, so these are exactly the windows that read `in`.
RG_HOST_DEVICE inline int64_t first_window(int64_t in, int64_t k, int64_t s, int64_t p) {
  const int64_t t = in + p - k + 1;
  return t <= 0 ? 0 : (t + s - 1) / s;
}
RG_HOST_DEVICE inline int64_t last_window(int64_t in, int64_t s, int64_t p, int64_t out) {
  const int64_t o = (in + p) / s;
  return o < out - 1 ? o : out - 1;
}

template <class T, class C>
__global__ void backward_kernel(const T* gy, T* gx, Pool2dGeometry g, CountIncludePad count) {
  const int64_t n = g.n * g.c * g.h * g.w;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t iw = i % g.w, ih = i / g.w % g.h, plane = i / (g.w * g.h);
    const T* gyp = gy + plane * g.oh * g.ow;
    const int64_t oh0 = first_window(ih, g.kernel.h, g.stride.h, g.padding.h);
    const int64_t oh1 = last_window(ih, g.stride.h, g.padding.h, g.oh);
    const int64_t ow0 = first_window(iw, g.kernel.w, g.stride.w, g.padding.w);
    const int64_t ow1 = last_window(iw, g.stride.w, g.padding.w, g.ow);
    C sum = 0;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const detail::AvgPoolWindow win = detail::avg_pool_window(g, count, oh, ow);
        sum += static_cast<C>(gyp[oh * g.ow + ow]) / static_cast<C>(win.divisor);
      }
    gx[i] = T(sum);
  }
}

}  // namespace avg_pool2d_cuda

// y (N, C, OH, OW) from x contiguous (N, C, H, W).
inline void launch_avg_pool2d(const Tensor& x, const Pool2dGeometry& g, CountIncludePad count,
                              const Tensor& y, cudaStream_t stream) {
  const int64_t n = y.numel();
  if (n == 0) return;
  dispatch_floating(x.dtype(), "avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(avg_pool2d_cuda::forward_kernel<T, compute_t<T>>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(x.data_ptr()),
                 static_cast<T*>(y.data_ptr()), g, count);
  });
}

// gx (N, C, H, W), every element written, from gy contiguous (N, C, OH, OW).
inline void launch_avg_pool2d_backward(const Tensor& gy, const Pool2dGeometry& g,
                                       CountIncludePad count, const Tensor& gx,
                                       cudaStream_t stream) {
  const int64_t n = gx.numel();
  if (n == 0) return;
  dispatch_floating(gy.dtype(), "avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(avg_pool2d_cuda::backward_kernel<T, compute_t<T>>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 static_cast<T*>(gx.data_ptr()), g, count);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
