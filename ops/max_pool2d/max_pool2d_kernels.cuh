#pragma once
// max_pool2d on the GPU. Forward: a thread per output element scans its window with the CPU's
// comparisons (the first maximum wins, a NaN replaces), so outputs and indices are the CPU's.
// Backward gathers instead of scattering: a thread per input element walks the (at most KH·KW)
// windows that cover it, in the order of the outputs, and adds gy where the window's index names
// it. No atomics, so the result is deterministic (and, in f32/f64, bit-equal to the CPU's
// scatter, which adds in the same order); 16-bit gradients are summed in float and rounded once.

#include <limits>

#include "core/cuda/kernel.h"
#include "ops/max_pool2d/max_pool2d_kernel.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace max_pool2d_cuda {

// minus_inf: −∞ in C, from the host (numeric_limits is host-only code for nvcc).
template <class T, class C>
__global__ void forward_kernel(const T* x, T* y, int64_t* indices, Pool2dGeometry g, C minus_inf) {
  const int64_t n = g.n * g.c * g.oh * g.ow;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.ow, oh = i / g.ow % g.oh, plane = i / (g.ow * g.oh);
    const T* xp = x + plane * g.h * g.w;
    const int64_t h0 = oh * g.stride.h - g.padding.h, w0 = ow * g.stride.w - g.padding.w;
    C best = minus_inf;
    int64_t best_i = -1;  // stays -1 only for a window that sees padding only
    for (int64_t a = 0; a < g.kernel.h; ++a) {
      const int64_t ih = h0 + a * g.dilation.h;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t b = 0; b < g.kernel.w; ++b) {
        const int64_t iw = w0 + b * g.dilation.w;
        if (iw < 0 || iw >= g.w) continue;
        const C v = static_cast<C>(xp[ih * g.w + iw]);
        if (best_i < 0 || v > best || v != v) {  // v != v: NaN propagates, as on the CPU
          best = v;
          best_i = ih * g.w + iw;
        }
      }
    }
    y[i] = T(best);
    indices[i] = best_i;
  }
}

// The outputs along one dim whose window covers input position `in`: tap t of output o reads
// o·stride − pad + t·dilation. Taps from last to first give the outputs in increasing order.
template <class T, class C>
__global__ void backward_kernel(const T* gy, const int64_t* indices, T* gx, Pool2dGeometry g) {
  const int64_t n = g.n * g.c * g.h * g.w;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t iw = i % g.w, ih = i / g.w % g.h, plane = i / (g.w * g.h);
    const int64_t self = ih * g.w + iw;
    const T* gyp = gy + plane * g.oh * g.ow;
    const int64_t* ip = indices + plane * g.oh * g.ow;
    C sum = 0;
    for (int64_t a = g.kernel.h - 1; a >= 0; --a) {
      const int64_t th = ih + g.padding.h - a * g.dilation.h;
      if (th < 0 || th % g.stride.h != 0 || th / g.stride.h >= g.oh) continue;
      const int64_t oh = th / g.stride.h;
      for (int64_t b = g.kernel.w - 1; b >= 0; --b) {
        const int64_t tw = iw + g.padding.w - b * g.dilation.w;
        if (tw < 0 || tw % g.stride.w != 0 || tw / g.stride.w >= g.ow) continue;
        const int64_t o = oh * g.ow + tw / g.stride.w;
        if (ip[o] == self) sum += static_cast<C>(gyp[o]);
      }
    }
    gx[i] = T(sum);
  }
}

}  // namespace max_pool2d_cuda

// output, indices from x (contiguous (N, C, H, W)); g from pool2d_geometry.
inline void launch_max_pool2d(const Tensor& x, const Pool2dGeometry& g, const Tensor& output,
                              const Tensor& indices, cudaStream_t stream) {
  const int64_t n = output.numel();
  if (n == 0) return;
  dispatch_floating(x.dtype(), "max_pool2d", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    cuda::launch(max_pool2d_cuda::forward_kernel<T, C>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(x.data_ptr()),
                 static_cast<T*>(output.data_ptr()), static_cast<int64_t*>(indices.data_ptr()), g,
                 -std::numeric_limits<C>::infinity());
  });
}

// gx (N, C, H, W), every element written, from gy and indices (contiguous (N, C, OH, OW)).
inline void launch_max_pool2d_backward(const Tensor& gy, const Tensor& indices,
                                       const Pool2dGeometry& g, const Tensor& gx,
                                       cudaStream_t stream) {
  const int64_t n = gx.numel();
  if (n == 0) return;
  dispatch_floating(gy.dtype(), "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(max_pool2d_cuda::backward_kernel<T, compute_t<T>>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 static_cast<const int64_t*>(indices.data_ptr()), static_cast<T*>(gx.data_ptr()),
                 g);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
