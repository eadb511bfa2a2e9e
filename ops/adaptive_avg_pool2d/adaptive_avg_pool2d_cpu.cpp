// CPU kernels of adaptive_avg_pool2d: one task per (n, c) plane, so the backward scatter into
// overlapping bins never races.
#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/adaptive_avg_pool2d/adaptive_avg_pool2d_kernel.h"
#include "ops/adaptive_avg_pool2d/adaptive_bins.h"
#include "ops/pool2d/pool2d_window.h"

namespace rg {
namespace detail {

void adaptive_avg_pool2d_forward(OnCpu, const Tensor& x, const Tensor& y) {
  const int64_t H = x.size(2), W = x.size(3), OH = y.size(2), OW = y.size(3);
  dispatch_floating(x.dtype(), "adaptive_avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* xd = static_cast<const T*>(x.data_ptr());
    T* yd = static_cast<T*>(y.data_ptr());
    // Each input element is read about once (bins tile the plane): the work is H·W a plane.
    parallel_for(x.size(0) * x.size(1), plane_grain(H * W + OH * OW), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* xp = xd + p * H * W;
        T* yp = yd + p * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t h0 = bin_start(oh, H, OH), h1 = bin_end(oh, H, OH);
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t w0 = bin_start(ow, W, OW), w1 = bin_end(ow, W, OW);
            // Global pooling sums a whole plane (e.g. 8×8 in ResNet, more in UNet-sized maps):
            // accumulate in double for f32 too, so the mean does not drift with H·W.
            double sum = 0;
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw)
                sum += static_cast<double>(static_cast<C>(xp[ih * W + iw]));
            yp[oh * OW + ow] = T(static_cast<C>(sum / static_cast<double>((h1 - h0) * (w1 - w0))));
          }
        }
      }
    });
  });
}

Tensor adaptive_avg_pool2d_backward(OnCpu, const Tensor& gy, const Shape& input_shape) {
  Tensor gx = zeros(input_shape, {gy.dtype(), gy.device()});
  const int64_t H = gx.size(2), W = gx.size(3), OH = gy.size(2), OW = gy.size(3);
  dispatch_floating(gy.dtype(), "adaptive_avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* gyd = static_cast<const T*>(gy.data_ptr());
    T* gxd = static_cast<T*>(gx.data_ptr());
    parallel_for(gx.size(0) * gx.size(1), plane_grain(H * W + OH * OW), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* gyp = gyd + p * OH * OW;
        T* gxp = gxd + p * H * W;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t h0 = bin_start(oh, H, OH), h1 = bin_end(oh, H, OH);
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t w0 = bin_start(ow, W, OW), w1 = bin_end(ow, W, OW);
            const C share =
                static_cast<C>(gyp[oh * OW + ow]) / static_cast<C>((h1 - h0) * (w1 - w0));
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw)
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
