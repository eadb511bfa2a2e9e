// CPU kernels of avg_pool2d: one task per (n, c) plane, so the backward scatter into
// overlapping windows never races.
#include <algorithm>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/avg_pool2d/avg_pool2d.h"

namespace rg {
namespace {

// The clipped window of output (oh, ow) and its divisor, PyTorch's rule (see the header).
struct Window {
  int64_t h0, h1, w0, w1;  // [h0, h1) × [w0, w1), inside the input; empty when h0 >= h1
  int64_t divisor;
};

Window window(const Pool2dGeometry& g, CountIncludePad count, int64_t oh, int64_t ow) {
  Window win;
  win.h0 = oh * g.stride.h - g.padding.h;
  win.w0 = ow * g.stride.w - g.padding.w;
  win.h1 = std::min(win.h0 + g.kernel.h, g.h + g.padding.h);
  win.w1 = std::min(win.w0 + g.kernel.w, g.w + g.padding.w);
  const int64_t padded_area = (win.h1 - win.h0) * (win.w1 - win.w0);
  win.h0 = std::max<int64_t>(win.h0, 0);
  win.w0 = std::max<int64_t>(win.w0, 0);
  win.h1 = std::min(win.h1, g.h);
  win.w1 = std::min(win.w1, g.w);
  win.divisor = count == CountIncludePad::on ? padded_area : (win.h1 - win.h0) * (win.w1 - win.w0);
  return win;
}

}  // namespace

void avg_pool2d_forward_cpu(const Tensor& x, const Pool2dGeometry& g, CountIncludePad count,
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
                         const Window win = window(g, count, oh, ow);
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

void avg_pool2d_backward_cpu(const Tensor& gy, const Pool2dGeometry& g, CountIncludePad count,
                             const Tensor& gx) {
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
                const Window win = window(g, count, oh, ow);
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
}

}  // namespace rg
