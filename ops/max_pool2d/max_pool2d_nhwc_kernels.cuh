#pragma once
// max_pool2d on the GPU for channels-last tensors: x (N, C, H, W) stored N, H, W, C; output,
// indices and gradients channels-last too. A thread per element in memory order, so the
// threads of a warp take neighbouring channels of one pixel: every load and store is one run.
// The comparisons, the tap order and the indices (ih·W + iw within the image, as PyTorch's and
// the NCHW kernels') are the NCHW kernels' (max_pool2d_kernels.cuh), so outputs and indices
// equal theirs. The backward, as the NCHW one: windows that never overlap (kernel == stride,
// airbench's pools) take a thread per (window, channel) that writes every element the window owns
// once, in 32-bit arithmetic; any other window a thread per input element that gathers the
// windows covering it in the order of the outputs (the CPU's scatter order, so f32/f64 gradients
// are bit-equal to the CPU's; 16-bit ones are summed in float and rounded once).

#include <limits>

#include "core/cuda/kernel.h"
#include "ops/max_pool2d/max_pool2d_kernel.h"
#include "ops/max_pool2d/max_pool2d_kernels.cuh"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace max_pool2d_nhwc_cuda {

template <class T, class C>
__global__ void forward_kernel(const T* x, T* y, int64_t* indices, Pool2dGeometry g, C minus_inf) {
  const int64_t n = g.n * g.oh * g.ow * g.c;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % g.c, pixel = i / g.c;
    const int64_t ow = pixel % g.ow, oh = pixel / g.ow % g.oh, image = pixel / (g.ow * g.oh);
    const T* xp = x + image * g.h * g.w * g.c + c;
    const int64_t h0 = oh * g.stride.h - g.padding.h, w0 = ow * g.stride.w - g.padding.w;
    C best = minus_inf;
    int64_t best_i = -1;  // stays -1 only for a window that sees padding only
    for (int64_t a = 0; a < g.kernel.h; ++a) {
      const int64_t ih = h0 + a * g.dilation.h;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t b = 0; b < g.kernel.w; ++b) {
        const int64_t iw = w0 + b * g.dilation.w;
        if (iw < 0 || iw >= g.w) continue;
        const C v = static_cast<C>(xp[(ih * g.w + iw) * g.c]);
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

template <class T, class C>
__global__ void backward_kernel(const T* gy, const int64_t* indices, T* gx, Pool2dGeometry g) {
  const int64_t n = g.n * g.h * g.w * g.c;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % g.c, pixel = i / g.c;
    const int64_t iw = pixel % g.w, ih = pixel / g.w % g.h, image = pixel / (g.w * g.h);
    const int64_t self = ih * g.w + iw;
    const int64_t base = image * g.oh * g.ow * g.c + c;
    C sum = 0;
    for (int64_t a = g.kernel.h - 1; a >= 0; --a) {
      const int64_t th = ih + g.padding.h - a * g.dilation.h;
      if (th < 0 || th % g.stride.h != 0 || th / g.stride.h >= g.oh) continue;
      const int64_t oh = th / g.stride.h;
      for (int64_t b = g.kernel.w - 1; b >= 0; --b) {
        const int64_t tw = iw + g.padding.w - b * g.dilation.w;
        if (tw < 0 || tw % g.stride.w != 0 || tw / g.stride.w >= g.ow) continue;
        const int64_t o = base + (oh * g.ow + tw / g.stride.w) * g.c;
        if (indices[o] == self) sum += static_cast<C>(gy[o]);
      }
    }
    gx[i] = T(sum);
  }
}

// The NCHW disjoint-window kernel's ownership rule (max_pool2d_kernels.cuh: the last window of a
// row or column also owns the leftovers), for window o = ((image·OH + oh)·OW + ow)·C + c.
template <class T, class C>
__global__ void backward_disjoint_kernel(const T* gy, const int64_t* indices, T* gx,
                                         max_pool2d_cuda::DisjointWindows g, uint32_t channels) {
  for (uint32_t o = blockIdx.x * blockDim.x + threadIdx.x; o < g.windows;
       o += gridDim.x * blockDim.x) {
    const uint32_t c = o % channels, pixel = o / channels;
    const uint32_t ow = pixel % g.ow, rest = pixel / g.ow, oh = rest % g.oh, image = rest / g.oh;
    const int64_t index = indices[o];
    // The CPU adds gy to its zero-filled gx: 0 + (−0) is +0, which a plain copy would not give.
    const T grad = T(C(0) + static_cast<C>(gy[o])), zero = T(C(0));
    const uint32_t h0 = oh * g.kh > g.pad_h ? oh * g.kh - g.pad_h : 0;
    const uint32_t w0 = ow * g.kw > g.pad_w ? ow * g.kw - g.pad_w : 0;
    const uint32_t h_end = (oh + 1) * g.kh - g.pad_h, w_end = (ow + 1) * g.kw - g.pad_w;
    const uint32_t h1 = oh + 1 == g.oh || h_end > g.h ? g.h : h_end;
    const uint32_t w1 = ow + 1 == g.ow || w_end > g.w ? g.w : w_end;
    T* gxp = gx + static_cast<size_t>(image) * g.h * g.w * channels + c;
    for (uint32_t ih = h0; ih < h1; ++ih)
      for (uint32_t iw = w0; iw < w1; ++iw) {
        const uint32_t self = ih * g.w + iw;
        gxp[static_cast<size_t>(self) * channels] = index == self ? grad : zero;
      }
  }
}

}  // namespace max_pool2d_nhwc_cuda

// output, indices (channels-last) from x (channels-last (N, C, H, W)).
inline void launch_max_pool2d_nhwc(const Tensor& x, const Pool2dGeometry& g, const Tensor& output,
                                   const Tensor& indices, cudaStream_t stream) {
  const int64_t n = output.numel();
  if (n == 0) return;
  dispatch_floating(x.dtype(), "max_pool2d", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    cuda::launch(max_pool2d_nhwc_cuda::forward_kernel<T, C>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(x.data_ptr()),
                 static_cast<T*>(output.data_ptr()), static_cast<int64_t*>(indices.data_ptr()), g,
                 -std::numeric_limits<C>::infinity());
  });
}

// gx (channels-last (N, C, H, W)), every element written, from gy and indices (channels-last).
inline void launch_max_pool2d_backward_nhwc(const Tensor& gy, const Tensor& indices,
                                            const Pool2dGeometry& g, const Tensor& gx,
                                            cudaStream_t stream) {
  const int64_t n = gx.numel();
  if (n == 0) return;
  dispatch_floating(gy.dtype(), "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    if (max_pool2d_cuda::takes_disjoint_windows(g)) {
      const max_pool2d_cuda::DisjointWindows d = max_pool2d_cuda::disjoint_windows(g);
      cuda::launch(max_pool2d_nhwc_cuda::backward_disjoint_kernel<T, C>,
                   dim3(cuda::grid_for(d.windows)), dim3(cuda::kBlockThreads), 0, stream,
                   static_cast<const T*>(gy.data_ptr()),
                   static_cast<const int64_t*>(indices.data_ptr()), static_cast<T*>(gx.data_ptr()),
                   d, static_cast<uint32_t>(g.c));
      return;
    }
    cuda::launch(max_pool2d_nhwc_cuda::backward_kernel<T, C>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 static_cast<const int64_t*>(indices.data_ptr()), static_cast<T*>(gx.data_ptr()),
                 g);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
