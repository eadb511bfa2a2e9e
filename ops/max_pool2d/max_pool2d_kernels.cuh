#pragma once
// max_pool2d on the GPU. Forward: a thread per output element scans its window with the CPU's
// comparisons (the first maximum wins, a NaN replaces), so outputs and indices are the CPU's.
// Backward, two kernels, neither with atomics, so the result is deterministic:
// - windows that never overlap (kernel == stride, no dilation: airbench's 2x2 and 3x3 pools):
//   a thread per window reads its gradient and index once and writes every input element the
//   window owns, once — the CPU's 0 + gy where the index points, 0 elsewhere: bit for bit;
// - any other window: gathers instead of scattering, a thread per input element walks the (at
//   most KH·KW) windows that cover it, in the order of the outputs, and adds gy where the
//   window's index names it (in f32/f64 bit-equal to the CPU's scatter, which adds in the same
//   order; 16-bit gradients are summed in float and rounded once).

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

// The disjoint-window backward's geometry, in 32 bits (the launcher takes that path only when
// every index fits): a 64-bit division costs several times a 32-bit one, and a thread divides
// twice per window.
struct DisjointWindows {
  uint32_t windows = 0;     // N·C·OH·OW
  uint32_t h = 0, w = 0;    // input
  uint32_t oh = 0, ow = 0;  // output
  uint32_t kh = 0, kw = 0;  // kernel = stride
  uint32_t pad_h = 0, pad_w = 0;
};

// Window (oh, ow) owns input rows [oh·KH − PH, (oh + 1)·KH − PH) and columns likewise, clipped to
// the input; the last window of a column or row also owns the rows or columns below or right of
// every window (a floor-mode pool's leftovers: row 30 of 31 under a 2x2 pool), so every input
// element is written exactly once and gx needs no zero fill.
template <class T, class C>
__global__ void backward_disjoint_kernel(const T* gy, const int64_t* indices, T* gx,
                                         DisjointWindows g) {
  for (uint32_t o = blockIdx.x * blockDim.x + threadIdx.x; o < g.windows;
       o += gridDim.x * blockDim.x) {
    const uint32_t ow = o % g.ow, rest = o / g.ow, oh = rest % g.oh, plane = rest / g.oh;
    const int64_t index = indices[o];
    // The CPU adds gy to its zero-filled gx: 0 + (−0) is +0, which a plain copy would not give.
    const T grad = T(C(0) + static_cast<C>(gy[o])), zero = T(C(0));
    const uint32_t h0 = oh * g.kh > g.pad_h ? oh * g.kh - g.pad_h : 0;
    const uint32_t w0 = ow * g.kw > g.pad_w ? ow * g.kw - g.pad_w : 0;
    const uint32_t h_end = (oh + 1) * g.kh - g.pad_h, w_end = (ow + 1) * g.kw - g.pad_w;
    const uint32_t h1 = oh + 1 == g.oh || h_end > g.h ? g.h : h_end;
    const uint32_t w1 = ow + 1 == g.ow || w_end > g.w ? g.w : w_end;
    T* gxp = gx + static_cast<size_t>(plane) * g.h * g.w;
    for (uint32_t ih = h0; ih < h1; ++ih)
      for (uint32_t iw = w0; iw < w1; ++iw) {
        const uint32_t self = ih * g.w + iw;
        gxp[self] = index == self ? grad : zero;
      }
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

namespace max_pool2d_cuda {

// Whether the disjoint-window backward applies: windows that never overlap nor leave gaps
// (kernel == stride, no dilation) and indices that fit its 32-bit arithmetic.
inline bool takes_disjoint_windows(const Pool2dGeometry& g) {
  const int64_t limit = int64_t{1} << 31;
  const int64_t reach_h = (g.oh + 1) * g.kernel.h, reach_w = (g.ow + 1) * g.kernel.w;
  return g.kernel == g.stride && g.dilation == Pool2dSize{1} && g.n * g.c * g.h * g.w < limit &&
         g.n * g.c * g.oh * g.ow < limit && reach_h < limit && reach_w < limit;
}

inline DisjointWindows disjoint_windows(const Pool2dGeometry& g) {
  const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  return {.windows = u32(g.n * g.c * g.oh * g.ow),
          .h = u32(g.h),
          .w = u32(g.w),
          .oh = u32(g.oh),
          .ow = u32(g.ow),
          .kh = u32(g.kernel.h),
          .kw = u32(g.kernel.w),
          .pad_h = u32(g.padding.h),
          .pad_w = u32(g.padding.w)};
}

}  // namespace max_pool2d_cuda

// gx (N, C, H, W), every element written, from gy and indices (contiguous (N, C, OH, OW)).
inline void launch_max_pool2d_backward(const Tensor& gy, const Tensor& indices,
                                       const Pool2dGeometry& g, const Tensor& gx,
                                       cudaStream_t stream) {
  namespace mp = max_pool2d_cuda;
  const int64_t n = gx.numel();
  if (n == 0) return;
  dispatch_floating(gy.dtype(), "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* gyd = static_cast<const T*>(gy.data_ptr());
    const int64_t* id = static_cast<const int64_t*>(indices.data_ptr());
    T* gxd = static_cast<T*>(gx.data_ptr());
    if (mp::takes_disjoint_windows(g)) {
      const mp::DisjointWindows d = mp::disjoint_windows(g);
      cuda::launch(mp::backward_disjoint_kernel<T, C>, dim3(cuda::grid_for(d.windows)),
                   dim3(cuda::kBlockThreads), 0, stream, gyd, id, gxd, d);
      return;
    }
    cuda::launch(mp::backward_kernel<T, C>, dim3(cuda::grid_for(n)), dim3(cuda::kBlockThreads), 0,
                 stream, gyd, id, gxd, g);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
