// CPU kernels of max_pool2d: one task per (n, c) plane, so a backward scatter never races
// (all windows of a plane write into that plane only).
#include <cmath>
#include <limits>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/max_pool2d/max_pool2d.h"

namespace rg {

void max_pool2d_forward_cpu(const Tensor& x, const Pool2dGeometry& g, const Tensor& output,
                            const Tensor& indices) {
  const int64_t H = g.h, W = g.w, OH = g.oh, OW = g.ow;
  const int64_t KH = g.kernel.h, KW = g.kernel.w, SH = g.stride.h, SW = g.stride.w;
  const int64_t PH = g.padding.h, PW = g.padding.w, DH = g.dilation.h, DW = g.dilation.w;
  dispatch_floating(x.dtype(), "max_pool2d", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* xd = static_cast<const T*>(x.data_ptr());
    T* yd = static_cast<T*>(output.data_ptr());
    int64_t* id = indices.data<int64_t>();
    parallel_for(g.n * g.c, plane_grain(OH * OW * KH * KW), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const T* xp = xd + p * H * W;
        T* yp = yd + p * OH * OW;
        int64_t* ip = id + p * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t h0 = oh * SH - PH;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t w0 = ow * SW - PW;
            C best = -std::numeric_limits<C>::infinity();
            int64_t best_i = -1;  // stays -1 only for a window that sees padding only
            for (int64_t a = 0; a < KH; ++a) {
              const int64_t ih = h0 + a * DH;
              if (ih < 0 || ih >= H) continue;
              for (int64_t b = 0; b < KW; ++b) {
                const int64_t iw = w0 + b * DW;
                if (iw < 0 || iw >= W) continue;
                const C v = static_cast<C>(xp[ih * W + iw]);
                // Strictly greater: the first maximum wins ties, as in PyTorch; a NaN always
                // replaces, so NaN propagates to the output.
                if (best_i < 0 || v > best || std::isnan(v)) {
                  best = v;
                  best_i = ih * W + iw;
                }
              }
            }
            yp[oh * OW + ow] = T(best);
            ip[oh * OW + ow] = best_i;
          }
        }
      }
    });
  });
}

void max_pool2d_backward_cpu(const Tensor& gy, const Tensor& indices, const Tensor& gx) {
  const int64_t planes = gx.size(0) * gx.size(1);
  const int64_t plane_in = gx.size(2) * gx.size(3);
  const int64_t plane_out = gy.size(2) * gy.size(3);
  dispatch_floating(gy.dtype(), "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* gyd = static_cast<const T*>(gy.data_ptr());
    const int64_t* id = indices.data<int64_t>();
    T* gxd = static_cast<T*>(gx.data_ptr());
    parallel_for(planes, plane_grain(plane_out), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const T* gyp = gyd + p * plane_out;
        const int64_t* ip = id + p * plane_out;
        T* gxp = gxd + p * plane_in;
        for (int64_t i = 0; i < plane_out; ++i) {
          if (ip[i] < 0) continue;
          gxp[ip[i]] = T(static_cast<C>(gxp[ip[i]]) + static_cast<C>(gyp[i]));
        }
      }
    });
  });
}

}  // namespace rg
