// CPU kernels of avg_pool2d: one task per (n, c) plane, so the backward scatter into
// overlapping windows never races.
#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/avg_pool2d/avg_pool2d_kernel.h"
#include "ops/avg_pool2d/avg_pool2d_window.h"

namespace rg {
namespace detail {

void avg_pool2d_forward(OnCpu, const Tensor& x, const Pool2dGeometry& g, CountIncludePad count,
                        const Tensor& y) {
  const int64_t H = g.h, W = g.w, OH = g.oh, OW = g.ow;
  dispatch_floating(x.dtype(), "avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* xd = static_cast<const T*>(x.data_ptr());
    T* yd = static_cast<T*>(y.data_ptr());
    parallel_for(g.n * g.c, plane_grain(OH * OW * g.kernel.h * g.kernel.w),
                 [&](int64_t b, int64_t e) {
                   for (int64_t p = b; p < e; ++p) {
                     const T* xp = xd + p * H * W;
                     T* yp = yd + p * OH * OW;
                     for (int64_t oh = 0; oh < OH; ++oh) {
                       for (int64_t ow = 0; ow < OW; ++ow) {
                         const AvgPoolWindow win = avg_pool_window(g, count, oh, ow);
                         if (win.h0 >= win.h1 || win.w0 >= win.w1) {
                           yp[oh * OW + ow] = T(C(0));
                           continue;
                         }
                         // A window holds few terms (KH·KW): summing in the compute type is exact
                         // enough.
                         C sum = 0;
                         for (int64_t ih = win.h0; ih < win.h1; ++ih)
                           for (int64_t iw = win.w0; iw < win.w1; ++iw)
                             sum += static_cast<C>(xp[ih * W + iw]);
                         yp[oh * OW + ow] = T(sum / static_cast<C>(win.divisor));
                       }
                     }
                   }
                 });
  });
}

Tensor avg_pool2d_backward(OnCpu, const Tensor& gy, const Pool2dGeometry& g,
                           CountIncludePad count) {
  Tensor gx = zeros({g.n, g.c, g.h, g.w}, {gy.dtype(), gy.device()});
  const int64_t H = g.h, W = g.w, OH = g.oh, OW = g.ow;
  dispatch_floating(gy.dtype(), "avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* gyd = static_cast<const T*>(gy.data_ptr());
    T* gxd = static_cast<T*>(gx.data_ptr());
    parallel_for(
        g.n * g.c, plane_grain(OH * OW * g.kernel.h * g.kernel.w), [&](int64_t b, int64_t e) {
          for (int64_t p = b; p < e; ++p) {
            const T* gyp = gyd + p * OH * OW;
            T* gxp = gxd + p * H * W;
            for (int64_t oh = 0; oh < OH; ++oh) {
              for (int64_t ow = 0; ow < OW; ++ow) {
                const AvgPoolWindow win = avg_pool_window(g, count, oh, ow);
                if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;
                const C share = static_cast<C>(gyp[oh * OW + ow]) / static_cast<C>(win.divisor);
                for (int64_t ih = win.h0; ih < win.h1; ++ih)
                  for (int64_t iw = win.w0; iw < win.w1; ++iw)
                    gxp[ih * W + iw] = T(static_cast<C>(gxp[ih * W + iw]) + share);
              }
            }
          }
        });
  });
  return gx;
}

}  // namespace detail
}  // namespace rg
