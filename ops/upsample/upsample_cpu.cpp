// CPU kernels of upsample: one task per (n, c) plane. Nearest backward gathers (each gx sums
// its own S × S block); bilinear backward scatters, which stays race-free because a plane
// belongs to one task.
#include <algorithm>
#include <vector>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/upsample/upsample_kernel.h"
#include "ops/upsample/upsample_taps.h"

namespace rg {
namespace {

// parallel_for grain over planes: enough planes per chunk for ~16K inner steps.
int64_t plane_grain(int64_t work_per_plane) {
  return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, work_per_plane));
}

}  // namespace

void detail::upsample_forward(OnCpu, const Tensor& x, int64_t scale, UpsampleMode mode,
                              AlignCorners align, const Tensor& y) {
  const int64_t H = x.size(2), W = x.size(3), OH = y.size(2), OW = y.size(3);
  dispatch_floating(x.dtype(), "upsample", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* xd = static_cast<const T*>(x.data_ptr());
    T* yd = static_cast<T*>(y.data_ptr());
    const int64_t planes = x.size(0) * x.size(1);
    if (mode == UpsampleMode::nearest) {
      parallel_for(planes, plane_grain(OH * OW), [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          const T* xp = xd + p * H * W;
          T* yp = yd + p * OH * OW;
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow)
              yp[oh * OW + ow] = xp[(oh / scale) * W + ow / scale];
        }
      });
      return;
    }
    const auto th = detail::linear_taps<C>(H, OH, scale, align);
    const auto tw = detail::linear_taps<C>(W, OW, scale, align);
    parallel_for(planes, plane_grain(4 * OH * OW), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* xp = xd + p * H * W;
        T* yp = yd + p * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const detail::Taps<C>& h = th[static_cast<std::size_t>(oh)];
          const T* r0 = xp + h.i0 * W;
          const T* r1 = xp + h.i1 * W;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const detail::Taps<C>& w = tw[static_cast<std::size_t>(ow)];
            const C v0 = w.l0 * static_cast<C>(r0[w.i0]) + w.l1 * static_cast<C>(r0[w.i1]);
            const C v1 = w.l0 * static_cast<C>(r1[w.i0]) + w.l1 * static_cast<C>(r1[w.i1]);
            yp[oh * OW + ow] = T(h.l0 * v0 + h.l1 * v1);
          }
        }
      }
    });
  });
}

Tensor detail::upsample_backward(OnCpu, const Tensor& gy, const Shape& input_shape, int64_t scale,
                                 UpsampleMode mode, AlignCorners align) {
  Tensor gx = zeros(input_shape, {gy.dtype(), gy.device()});
  const int64_t H = gx.size(2), W = gx.size(3), OH = gy.size(2), OW = gy.size(3);
  dispatch_floating(gy.dtype(), "upsample_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* gyd = static_cast<const T*>(gy.data_ptr());
    T* gxd = static_cast<T*>(gx.data_ptr());
    const int64_t planes = gx.size(0) * gx.size(1);
    if (mode == UpsampleMode::nearest) {
      parallel_for(planes, plane_grain(OH * OW), [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          const T* gyp = gyd + p * OH * OW;
          T* gxp = gxd + p * H * W;
          for (int64_t ih = 0; ih < H; ++ih)
            for (int64_t iw = 0; iw < W; ++iw) {
              C sum = 0;
              for (int64_t a = ih * scale; a < (ih + 1) * scale; ++a)
                for (int64_t c = iw * scale; c < (iw + 1) * scale; ++c)
                  sum += static_cast<C>(gyp[a * OW + c]);
              gxp[ih * W + iw] = T(sum);
            }
        }
      });
      return;
    }
    const auto th = detail::linear_taps<C>(H, OH, scale, align);
    const auto tw = detail::linear_taps<C>(W, OW, scale, align);
    parallel_for(planes, plane_grain(4 * OH * OW), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* gyp = gyd + p * OH * OW;
        T* gxp = gxd + p * H * W;
        // 16-bit gradients would lose the small contributions scattered into one element:
        // accumulate the plane in the compute type, then store once.
        std::vector<C> acc(static_cast<std::size_t>(H * W), C(0));
        for (int64_t oh = 0; oh < OH; ++oh) {
          const detail::Taps<C>& h = th[static_cast<std::size_t>(oh)];
          C* a0 = acc.data() + h.i0 * W;
          C* a1 = acc.data() + h.i1 * W;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const detail::Taps<C>& w = tw[static_cast<std::size_t>(ow)];
            const C g = static_cast<C>(gyp[oh * OW + ow]);
            a0[w.i0] += h.l0 * w.l0 * g;
            a0[w.i1] += h.l0 * w.l1 * g;
            a1[w.i0] += h.l1 * w.l0 * g;
            a1[w.i1] += h.l1 * w.l1 * g;
          }
        }
        for (int64_t i = 0; i < H * W; ++i) gxp[i] = T(acc[static_cast<std::size_t>(i)]);
      }
    });
  });
  return gx;
}

}  // namespace rg
