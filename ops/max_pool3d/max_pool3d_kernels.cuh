#pragma once
// max_pool3d on the GPU, as max_pool2d's kernels one dimension up. Forward: a thread per output
// element scans its window with the CPU's comparisons (the first maximum wins, a NaN replaces),
// so outputs and indices are the CPU's. Backward gathers instead of scattering: a thread per
// input element walks the (at most KD·KH·KW) windows that cover it, in the order of the outputs,
// and adds gy where the window's index names it. No atomics, so the result is deterministic
// (and, in f32/f64, bit-equal to the CPU's scatter, which adds in the same order); 16-bit
// gradients are summed in float and rounded once.

#include <limits>

#include "core/cuda/kernel.h"
#include "ops/max_pool3d/max_pool3d_kernel.h"

namespace rg {
inline namespace RG_KERNEL_BUILD {
namespace max_pool3d_cuda {

// minus_inf: −∞ in C, from the host (numeric_limits is host-only code for nvcc).
template <class T, class C>
__global__ void forward_kernel(const T* x, T* y, int64_t* indices, Pool3dGeometry g, C minus_inf) {
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2];
  const int64_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t n = g.planes * OD * OH * OW;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ow = i % OW, oh = i / OW % OH, od = i / (OW * OH) % OD;
    const int64_t plane = i / (OW * OH * OD);
    const T* xv = x + plane * D * H * W;
    C best = minus_inf;
    int64_t best_i = -1;  // stays -1 only for a window that sees padding only
    for (int64_t a = 0; a < g.kernel[0]; ++a) {
      const int64_t i0 = od * g.stride[0] - g.padding[0] + a * g.dilation[0];
      if (i0 < 0 || i0 >= D) continue;
      for (int64_t b = 0; b < g.kernel[1]; ++b) {
        const int64_t i1 = oh * g.stride[1] - g.padding[1] + b * g.dilation[1];
        if (i1 < 0 || i1 >= H) continue;
        for (int64_t e = 0; e < g.kernel[2]; ++e) {
          const int64_t i2 = ow * g.stride[2] - g.padding[2] + e * g.dilation[2];
          if (i2 < 0 || i2 >= W) continue;
          const int64_t at = (i0 * H + i1) * W + i2;
          const C v = static_cast<C>(xv[at]);
          if (best_i < 0 || v > best || v != v) {  // v != v: NaN propagates, as on the CPU
            best = v;
            best_i = at;
          }
        }
      }
    }
    y[i] = T(best);
    indices[i] = best_i;
  }
}

// The output along axis `a` read by tap t at input position `in`: o·stride − pad + t·dilation =
// in, or −1 when no output's tap t lands there.
__device__ inline int64_t covering_output(const Pool3dGeometry& g, int a, int64_t in, int64_t t) {
  const int64_t shifted = in + g.padding[a] - t * g.dilation[a];
  if (shifted < 0 || shifted % g.stride[a] != 0 || shifted / g.stride[a] >= g.out[a]) return -1;
  return shifted / g.stride[a];
}

// Taps from last to first give the outputs of each axis in increasing order, so the windows
// are visited in the order of the CPU's scatter.
template <class T, class C>
__global__ void backward_kernel(const T* gy, const int64_t* indices, T* gx, Pool3dGeometry g) {
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2];
  const int64_t OH = g.out[1], OW = g.out[2];
  const int64_t out_volume = g.out[0] * OH * OW;
  const int64_t n = g.planes * D * H * W;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t iw = i % W, ih = i / W % H, id = i / (W * H) % D, plane = i / (W * H * D);
    const int64_t self = (id * H + ih) * W + iw;
    const T* gyv = gy + plane * out_volume;
    const int64_t* iv = indices + plane * out_volume;
    C sum = 0;
    for (int64_t a = g.kernel[0] - 1; a >= 0; --a) {
      const int64_t od = covering_output(g, 0, id, a);
      if (od < 0) continue;
      for (int64_t b = g.kernel[1] - 1; b >= 0; --b) {
        const int64_t oh = covering_output(g, 1, ih, b);
        if (oh < 0) continue;
        for (int64_t e = g.kernel[2] - 1; e >= 0; --e) {
          const int64_t ow = covering_output(g, 2, iw, e);
          if (ow < 0) continue;
          const int64_t o = (od * OH + oh) * OW + ow;
          if (iv[o] == self) sum += static_cast<C>(gyv[o]);
        }
      }
    }
    gx[i] = T(sum);
  }
}

}  // namespace max_pool3d_cuda

// output, indices from x (contiguous (N, C, D, H, W)); g from pool3d_geometry.
inline void launch_max_pool3d(const Tensor& x, const Pool3dGeometry& g, const Tensor& output,
                              const Tensor& indices, cudaStream_t stream) {
  const int64_t n = output.numel();
  if (n == 0) return;
  dispatch_floating(x.dtype(), "max_pool3d", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    cuda::launch(max_pool3d_cuda::forward_kernel<T, C>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(x.data_ptr()),
                 static_cast<T*>(output.data_ptr()), static_cast<int64_t*>(indices.data_ptr()), g,
                 -std::numeric_limits<C>::infinity());
  });
}

// gx (N, C, D, H, W), every element written, from gy and indices (contiguous (N, C, OD, OH, OW)).
inline void launch_max_pool3d_backward(const Tensor& gy, const Tensor& indices,
                                       const Pool3dGeometry& g, const Tensor& gx,
                                       cudaStream_t stream) {
  const int64_t n = gx.numel();
  if (n == 0) return;
  dispatch_floating(gy.dtype(), "max_pool3d_backward", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(max_pool3d_cuda::backward_kernel<T, compute_t<T>>, dim3(cuda::grid_for(n)),
                 dim3(cuda::kBlockThreads), 0, stream, static_cast<const T*>(gy.data_ptr()),
                 static_cast<const int64_t*>(indices.data_ptr()), static_cast<T*>(gx.data_ptr()),
                 g);
  });
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg
