// max_pool3d on the CPU: one task per (n, c) volume, so the backward scatter never races (every
// window of a volume writes into that volume only).
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/thread_pool.h"
#include "ops/max_pool3d/max_pool3d_kernel.h"

namespace rg::detail {
namespace {

int64_t volume_grain(int64_t work) {
  return std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, work));
}

}  // namespace

void max_pool3d_forward(OnCpu, const Tensor& x, const Pool3dGeometry& g, const Tensor& output,
                        const Tensor& indices) {
  dispatch_floating(x.dtype(), "max_pool3d", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* xd = static_cast<const T*>(x.data_ptr());
    T* yd = static_cast<T*>(output.data_ptr());
    int64_t* id = indices.data<int64_t>();
    const int64_t D = g.in[0], H = g.in[1], W = g.in[2];
    const int64_t window = g.kernel[0] * g.kernel[1] * g.kernel[2];
    parallel_for(g.planes, volume_grain(g.out_volume() * window), [&](int64_t lo, int64_t hi) {
      for (int64_t v = lo; v < hi; ++v) {
        const T* xv = xd + v * g.in_volume();
        T* yv = yd + v * g.out_volume();
        int64_t* iv = id + v * g.out_volume();
        for (int64_t od = 0; od < g.out[0]; ++od)
          for (int64_t oh = 0; oh < g.out[1]; ++oh)
            for (int64_t ow = 0; ow < g.out[2]; ++ow) {
              C best = -std::numeric_limits<C>::infinity();
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
                    const C val = static_cast<C>(xv[at]);
                    // Strictly greater: the first maximum wins ties, as in PyTorch; a NaN
                    // always replaces, so NaN propagates to the output.
                    if (best_i < 0 || val > best || std::isnan(val)) {
                      best = val;
                      best_i = at;
                    }
                  }
                }
              }
              const int64_t o = (od * g.out[1] + oh) * g.out[2] + ow;
              yv[o] = T(best);
              iv[o] = best_i;
            }
      }
    });
  });
}

Tensor max_pool3d_backward(OnCpu, const Tensor& gy, const Tensor& indices,
                           const Pool3dGeometry& g) {
  Tensor gx = zeros({gy.size(0), gy.size(1), g.in[0], g.in[1], g.in[2]}, {gy.dtype(), gy.device()});
  const int64_t in = g.in_volume(), out = g.out_volume();
  dispatch_floating(gy.dtype(), "max_pool3d_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* gyd = static_cast<const T*>(gy.data_ptr());
    const int64_t* id = indices.data<int64_t>();
    T* gxd = static_cast<T*>(gx.data_ptr());
    parallel_for(g.planes, volume_grain(out), [&](int64_t lo, int64_t hi) {
      for (int64_t v = lo; v < hi; ++v) {
        const T* gyv = gyd + v * out;
        const int64_t* iv = id + v * out;
        T* gxv = gxd + v * in;
        for (int64_t i = 0; i < out; ++i) {
          if (iv[i] < 0) continue;
          gxv[iv[i]] = T(static_cast<C>(gxv[iv[i]]) + static_cast<C>(gyv[i]));
        }
      }
    });
  });
  return gx;
}

}  // namespace rg::detail
