// CPU kernels of max_pool2d on channels-last tensors: one task per image, the channels innermost
// (a window tap is one contiguous run of C values, compared lane by lane), so a backward scatter
// never races (all windows of an image write into that image only).
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/max_pool2d/max_pool2d_kernel.h"

namespace rg::detail {

void max_pool2d_forward_nhwc(OnCpu, const Tensor& x, const Pool2dGeometry& g, const Tensor& output,
                             const Tensor& indices) {
  const int64_t C = g.c, H = g.h, W = g.w, OH = g.oh, OW = g.ow;
  dispatch_floating(x.dtype(), "max_pool2d", [&](auto tag) {
    using T = decltype(tag);
    using Cm = compute_t<T>;
    const T* xd = static_cast<const T*>(x.data_ptr());
    T* yd = static_cast<T*>(output.data_ptr());
    int64_t* id = indices.data<int64_t>();
    parallel_for(g.n, plane_grain(OH * OW * C * g.kernel.h * g.kernel.w),
                 [&](int64_t begin, int64_t end) {
                   std::vector<Cm> best(static_cast<std::size_t>(C));
                   for (int64_t n = begin; n < end; ++n) {
                     const T* xn = xd + n * H * W * C;
                     for (int64_t oh = 0; oh < OH; ++oh)
                       for (int64_t ow = 0; ow < OW; ++ow) {
                         T* y = yd + ((n * OH + oh) * OW + ow) * C;
                         int64_t* ix = id + ((n * OH + oh) * OW + ow) * C;
                         // −1: a window that sees padding only keeps it (as the NCHW kernel).
                         for (int64_t c = 0; c < C; ++c) {
                           best[c] = -std::numeric_limits<Cm>::infinity();
                           ix[c] = -1;
                         }
                         // Taps in the NCHW kernel's order, and its comparisons: the first
                         // maximum wins ties, a NaN always replaces.
                         for (int64_t a = 0; a < g.kernel.h; ++a) {
                           const int64_t ih = oh * g.stride.h - g.padding.h + a * g.dilation.h;
                           if (ih < 0 || ih >= H) continue;
                           for (int64_t b = 0; b < g.kernel.w; ++b) {
                             const int64_t iw = ow * g.stride.w - g.padding.w + b * g.dilation.w;
                             if (iw < 0 || iw >= W) continue;
                             const T* xt = xn + (ih * W + iw) * C;
                             const int64_t at = ih * W + iw;
                             for (int64_t c = 0; c < C; ++c) {
                               const Cm v = static_cast<Cm>(xt[c]);
                               if (ix[c] < 0 || v > best[c] || std::isnan(v)) {
                                 best[c] = v;
                                 ix[c] = at;
                               }
                             }
                           }
                         }
                         for (int64_t c = 0; c < C; ++c) y[c] = T(best[c]);
                       }
                   }
                 });
  });
}

Tensor max_pool2d_backward_nhwc(OnCpu, const Tensor& gy, const Tensor& indices,
                                const Pool2dGeometry& g) {
  Tensor gx = empty({g.n, g.c, g.h, g.w}, {gy.dtype(), gy.device()}, MemoryFormat::channels_last);
  std::memset(gx.data_ptr(), 0, gx.nbytes());  // dense: all-zero bytes are +0 in every dtype
  const int64_t C = g.c, out_pixels = g.oh * g.ow, in_pixels = g.h * g.w;
  dispatch_floating(gy.dtype(), "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    using Cm = compute_t<T>;
    const T* gyd = static_cast<const T*>(gy.data_ptr());
    const int64_t* id = indices.data<int64_t>();
    T* gxd = static_cast<T*>(gx.data_ptr());
    parallel_for(g.n, plane_grain(out_pixels * C), [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        T* gxn = gxd + n * in_pixels * C;
        // Outputs in increasing order per channel, as the NCHW scatter adds them.
        for (int64_t o = 0; o < out_pixels; ++o) {
          const T* gyo = gyd + (n * out_pixels + o) * C;
          const int64_t* io = id + (n * out_pixels + o) * C;
          for (int64_t c = 0; c < C; ++c) {
            if (io[c] < 0) continue;
            T& to = gxn[io[c] * C + c];
            to = T(static_cast<Cm>(to) + static_cast<Cm>(gyo[c]));
          }
        }
      }
    });
  });
  return gx;
}

}  // namespace rg::detail
