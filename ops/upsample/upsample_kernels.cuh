#pragma once
// upsample on the GPU. Forward: a thread per output element; bilinear taps come from
// upsample_taps.h, the CPU's own code. Backward gathers instead of scattering: a thread per
// input element visits the outputs that read it — its S × S block for nearest; for bilinear,
// the outputs whose taps name it, found by recomputing the taps over a small range of outputs
// that surely holds them — and sums their contributions in the compute type, in the order of
// the CPU's scatter (rows, then columns, then the four neighbours). No atomics: deterministic,
// and 16-bit gradients are summed in float and rounded once. Volumes (nearest, trilinear) have
// kernels of their own below, on the same rules.

#include "core/cuda/kernel.h"
#include "ops/upsample/upsample_kernel.h"
#include "ops/upsample/upsample_taps.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace upsample_cuda {

// Planes N·C of x (h, w) and y (oh, ow) = (h·scale, w·scale), the mode and its options.
struct Geometry {
  int64_t planes, h, w, oh, ow, scale;
  UpsampleMode mode;
  AlignCorners align;
};

template <class T, class C>
__global__ void forward_kernel(const T* x, T* y, Geometry g, C ratio_h, C ratio_w) {
  const int64_t n = g.planes * g.oh * g.ow;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.ow, oh = i / g.ow % g.oh, plane = i / (g.ow * g.oh);
    const T* xp = x + plane * g.h * g.w;
    if (g.mode == UpsampleMode::nearest) {
      y[i] = xp[(oh / g.scale) * g.w + ow / g.scale];
      continue;
    }
    const detail::Taps<C> h = detail::linear_tap<C>(oh, g.h, ratio_h, g.align);
    const detail::Taps<C> w = detail::linear_tap<C>(ow, g.w, ratio_w, g.align);
    const T* r0 = xp + h.i0 * g.w;
    const T* r1 = xp + h.i1 * g.w;
    const C v0 = w.l0 * static_cast<C>(r0[w.i0]) + w.l1 * static_cast<C>(r0[w.i1]);
    const C v1 = w.l0 * static_cast<C>(r1[w.i0]) + w.l1 * static_cast<C>(r1[w.i1]);
    y[i] = T(h.l0 * v0 + h.l1 * v1);
  }
}

// Outputs [first, last] of one dim that may have `in_pos` among their taps. A tap pair reads
// source positions floor(src) and floor(src) + 1, so the outputs wanted have src in
// [in_pos − 1, in_pos + 1); the bounds below hold that interval with a margin of a whole output
// (or more), so rounding of src in C cannot push a wanted output outside. The kernel then keeps
// only the outputs whose taps name in_pos.
struct Range {
  int64_t first, last;
};
RG_HOST_DEVICE inline Range outputs_reading(int64_t in_pos, int64_t in, int64_t out, int64_t scale,
                                            AlignCorners align) {
  int64_t first = 0, last = out - 1;
  if (align == AlignCorners::off) {
    // src = (o + 0.5) / S − 0.5: o in [(in_pos − 0.5)·S − 0.5, (in_pos + 1.5)·S − 0.5).
    first = (in_pos - 1) * scale - 1;
    last = (in_pos + 2) * scale;
  } else if (in > 1) {
    // src = o · (in − 1) / (out − 1). (in == 1: every output reads position 0.)
    first = in_pos >= 1 ? (in_pos - 1) * (out - 1) / (in - 1) - 1 : 0;
    last = ((in_pos + 1) * (out - 1) + in - 2) / (in - 1) + 1;
  }
  return {first > 0 ? first : 0, last < out - 1 ? last : out - 1};
}

template <class T, class C>
__global__ void backward_kernel(const T* gy, T* gx, Geometry g, C ratio_h, C ratio_w) {
  const int64_t n = g.planes * g.h * g.w;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t iw = i % g.w, ih = i / g.w % g.h, plane = i / (g.w * g.h);
    const T* gyp = gy + plane * g.oh * g.ow;
    C sum = 0;
    if (g.mode == UpsampleMode::nearest) {
      for (int64_t a = ih * g.scale; a < (ih + 1) * g.scale; ++a)
        for (int64_t c = iw * g.scale; c < (iw + 1) * g.scale; ++c)
          sum += static_cast<C>(gyp[a * g.ow + c]);
      gx[i] = T(sum);
      continue;
    }
    const Range rh = outputs_reading(ih, g.h, g.oh, g.scale, g.align);
    const Range rw = outputs_reading(iw, g.w, g.ow, g.scale, g.align);
    for (int64_t oh = rh.first; oh <= rh.last; ++oh) {
      const detail::Taps<C> h = detail::linear_tap<C>(oh, g.h, ratio_h, g.align);
      if (h.i0 != ih && h.i1 != ih) continue;
      for (int64_t ow = rw.first; ow <= rw.last; ++ow) {
        const detail::Taps<C> w = detail::linear_tap<C>(ow, g.w, ratio_w, g.align);
        if (w.i0 != iw && w.i1 != iw) continue;
        const C v = static_cast<C>(gyp[oh * g.ow + ow]);
        // The CPU's order: (i0, i0), (i0, i1), (i1, i0), (i1, i1); at an edge i0 == i1 and
        // both weights land here.
        if (h.i0 == ih && w.i0 == iw) sum += h.l0 * w.l0 * v;
        if (h.i0 == ih && w.i1 == iw) sum += h.l0 * w.l1 * v;
        if (h.i1 == ih && w.i0 == iw) sum += h.l1 * w.l0 * v;
        if (h.i1 == ih && w.i1 == iw) sum += h.l1 * w.l1 * v;
      }
    }
    gx[i] = T(sum);
  }
}

inline Geometry geometry(const Tensor& x_like, const Tensor& y_like, int64_t scale,
                         UpsampleMode mode, AlignCorners align) {
  return {x_like.size(0) * x_like.size(1),
          x_like.size(2),
          x_like.size(3),
          y_like.size(2),
          y_like.size(3),
          scale,
          mode,
          align};
}

// Volumes (N·C of them): x (d, h, w), y (od, oh, ow) = (d·scale, h·scale, w·scale).
struct Geometry3d {
  int64_t volumes, d, h, w, od, oh, ow, scale;
  UpsampleMode mode;  // nearest or trilinear
  AlignCorners align;
};

// A thread per output element; trilinear is bilinear on two planes, then along D, as the CPU.
template <class T, class C>
__global__ void forward3d_kernel(const T* x, T* y, Geometry3d g, C ratio_d, C ratio_h, C ratio_w) {
  const int64_t n = g.volumes * g.od * g.oh * g.ow;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.ow, oh = i / g.ow % g.oh, od = i / (g.ow * g.oh) % g.od;
    const int64_t v = i / (g.ow * g.oh * g.od);
    const T* xv = x + v * g.d * g.h * g.w;
    if (g.mode == UpsampleMode::nearest) {
      y[i] = xv[((od / g.scale) * g.h + oh / g.scale) * g.w + ow / g.scale];
      continue;
    }
    const detail::Taps<C> d = detail::linear_tap<C>(od, g.d, ratio_d, g.align);
    const detail::Taps<C> h = detail::linear_tap<C>(oh, g.h, ratio_h, g.align);
    const detail::Taps<C> w = detail::linear_tap<C>(ow, g.w, ratio_w, g.align);
    C planes[2];
    for (int k = 0; k < 2; ++k) {
      const T* p = xv + (k == 0 ? d.i0 : d.i1) * g.h * g.w;
      const T* r0 = p + h.i0 * g.w;
      const T* r1 = p + h.i1 * g.w;
      const C v0 = w.l0 * static_cast<C>(r0[w.i0]) + w.l1 * static_cast<C>(r0[w.i1]);
      const C v1 = w.l0 * static_cast<C>(r1[w.i0]) + w.l1 * static_cast<C>(r1[w.i1]);
      planes[k] = h.l0 * v0 + h.l1 * v1;
    }
    y[i] = T(d.l0 * planes[0] + d.l1 * planes[1]);
  }
}

// A thread per input element gathers what the CPU scatters: its S × S × S block for nearest;
// for trilinear the outputs whose taps name it (outputs_reading per dim), summed in the CPU's
// order — outputs (d, h, w) ascending, then the eight neighbours in lexicographic order, each
// weight formed as (λd·λh)·λw·g like the CPU's.
template <class T, class C>
__global__ void backward3d_kernel(const T* gy, T* gx, Geometry3d g, C ratio_d, C ratio_h,
                                  C ratio_w) {
  const int64_t n = g.volumes * g.d * g.h * g.w;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t iw = i % g.w, ih = i / g.w % g.h, id = i / (g.w * g.h) % g.d;
    const int64_t v = i / (g.w * g.h * g.d);
    const T* gyv = gy + v * g.od * g.oh * g.ow;
    C sum = 0;
    if (g.mode == UpsampleMode::nearest) {
      for (int64_t k = id * g.scale; k < (id + 1) * g.scale; ++k)
        for (int64_t a = ih * g.scale; a < (ih + 1) * g.scale; ++a)
          for (int64_t c = iw * g.scale; c < (iw + 1) * g.scale; ++c)
            sum += static_cast<C>(gyv[(k * g.oh + a) * g.ow + c]);
      gx[i] = T(sum);
      continue;
    }
    const Range rd = outputs_reading(id, g.d, g.od, g.scale, g.align);
    const Range rh = outputs_reading(ih, g.h, g.oh, g.scale, g.align);
    const Range rw = outputs_reading(iw, g.w, g.ow, g.scale, g.align);
    for (int64_t od = rd.first; od <= rd.last; ++od) {
      const detail::Taps<C> d = detail::linear_tap<C>(od, g.d, ratio_d, g.align);
      if (d.i0 != id && d.i1 != id) continue;
      for (int64_t oh = rh.first; oh <= rh.last; ++oh) {
        const detail::Taps<C> h = detail::linear_tap<C>(oh, g.h, ratio_h, g.align);
        if (h.i0 != ih && h.i1 != ih) continue;
        // The CPU's plane weights, neighbours (d, h) in the order 00, 01, 10, 11.
        const bool dh[4] = {d.i0 == id && h.i0 == ih, d.i0 == id && h.i1 == ih,
                            d.i1 == id && h.i0 == ih, d.i1 == id && h.i1 == ih};
        const C ldh[4] = {d.l0 * h.l0, d.l0 * h.l1, d.l1 * h.l0, d.l1 * h.l1};
        for (int64_t ow = rw.first; ow <= rw.last; ++ow) {
          const detail::Taps<C> w = detail::linear_tap<C>(ow, g.w, ratio_w, g.align);
          if (w.i0 != iw && w.i1 != iw) continue;
          const C gv = static_cast<C>(gyv[(od * g.oh + oh) * g.ow + ow]);
          for (int k = 0; k < 4; ++k) {
            if (!dh[k]) continue;
            if (w.i0 == iw) sum += ldh[k] * w.l0 * gv;
            if (w.i1 == iw) sum += ldh[k] * w.l1 * gv;
          }
        }
      }
    }
    gx[i] = T(sum);
  }
}

inline Geometry3d geometry3d(const Tensor& x_like, const Tensor& y_like, int64_t scale,
                             UpsampleMode mode, AlignCorners align) {
  return {x_like.size(0) * x_like.size(1),
          x_like.size(2),
          x_like.size(3),
          x_like.size(4),
          y_like.size(2),
          y_like.size(3),
          y_like.size(4),
          scale,
          mode,
          align};
}

}  // namespace upsample_cuda

// y (N, C, H·S, W·S) from x contiguous (N, C, H, W).
inline void launch_upsample(const Tensor& x, int64_t scale, UpsampleMode mode, AlignCorners align,
                            const Tensor& y, cudaStream_t stream) {
  const int64_t n = y.numel();
  if (n == 0) return;
  const upsample_cuda::Geometry g = upsample_cuda::geometry(x, y, scale, mode, align);
  dispatch_floating(x.dtype(), "upsample", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    cuda::launch(upsample_cuda::forward_kernel<T, C>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(x.data_ptr()),
                 static_cast<T*>(y.data_ptr()), g, detail::linear_ratio<C>(g.h, g.oh, scale, align),
                 detail::linear_ratio<C>(g.w, g.ow, scale, align));
  });
}

// gx (N, C, H, W), every element written, from gy contiguous (N, C, H·S, W·S).
inline void launch_upsample_backward(const Tensor& gy, int64_t scale, UpsampleMode mode,
                                     AlignCorners align, const Tensor& gx, cudaStream_t stream) {
  const int64_t n = gx.numel();
  if (n == 0) return;
  const upsample_cuda::Geometry g = upsample_cuda::geometry(gx, gy, scale, mode, align);
  dispatch_floating(gy.dtype(), "upsample_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    cuda::launch(upsample_cuda::backward_kernel<T, C>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 static_cast<T*>(gx.data_ptr()), g,
                 detail::linear_ratio<C>(g.h, g.oh, scale, align),
                 detail::linear_ratio<C>(g.w, g.ow, scale, align));
  });
}

// y (N, C, D·S, H·S, W·S) from x contiguous (N, C, D, H, W); nearest or trilinear.
inline void launch_upsample3d(const Tensor& x, int64_t scale, UpsampleMode mode, AlignCorners align,
                              const Tensor& y, cudaStream_t stream) {
  const int64_t n = y.numel();
  if (n == 0) return;
  const upsample_cuda::Geometry3d g = upsample_cuda::geometry3d(x, y, scale, mode, align);
  dispatch_floating(x.dtype(), "upsample", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    cuda::launch(upsample_cuda::forward3d_kernel<T, C>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(x.data_ptr()),
                 static_cast<T*>(y.data_ptr()), g, detail::linear_ratio<C>(g.d, g.od, scale, align),
                 detail::linear_ratio<C>(g.h, g.oh, scale, align),
                 detail::linear_ratio<C>(g.w, g.ow, scale, align));
  });
}

// gx (N, C, D, H, W), every element written, from gy contiguous (N, C, D·S, H·S, W·S).
inline void launch_upsample3d_backward(const Tensor& gy, int64_t scale, UpsampleMode mode,
                                       AlignCorners align, const Tensor& gx, cudaStream_t stream) {
  const int64_t n = gx.numel();
  if (n == 0) return;
  const upsample_cuda::Geometry3d g = upsample_cuda::geometry3d(gx, gy, scale, mode, align);
  dispatch_floating(gy.dtype(), "upsample_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    cuda::launch(upsample_cuda::backward3d_kernel<T, C>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 static_cast<T*>(gx.data_ptr()), g,
                 detail::linear_ratio<C>(g.d, g.od, scale, align),
                 detail::linear_ratio<C>(g.h, g.oh, scale, align),
                 detail::linear_ratio<C>(g.w, g.ow, scale, align));
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
