// CPU kernels of upsample over volumes (N, C, D, H, W): the plain reference of the 3-D GPU
// kernels. Forward and nearest backward run one task per output (input) depth slice, so one
// volume with a few channels — a 3-D UNet's usual batch — still feeds every thread. Trilinear
// backward scatters into an accumulator per volume, which stays race-free because a volume
// belongs to one task.
#include <algorithm>
#include <vector>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/upsample/upsample_kernel.h"
#include "ops/upsample/upsample_taps.h"

namespace rg {
namespace {

// parallel_for grain: enough items per chunk for ~16K inner steps.
int64_t grain(int64_t work_per_item) {
  return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, work_per_item));
}

}  // namespace

void detail::upsample3d_forward(OnCpu, const Tensor& x, int64_t scale, UpsampleMode mode,
                                AlignCorners align, const Tensor& y) {
  const int64_t D = x.size(2), H = x.size(3), W = x.size(4);
  const int64_t OD = y.size(2), OH = y.size(3), OW = y.size(4);
  dispatch_floating(x.dtype(), "upsample", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* xd = static_cast<const T*>(x.data_ptr());
    T* yd = static_cast<T*>(y.data_ptr());
    const int64_t slices = x.size(0) * x.size(1) * OD;  // (volume, output depth)
    if (mode == UpsampleMode::nearest) {
      parallel_for(slices, grain(OH * OW), [&](int64_t b, int64_t e) {
        for (int64_t s = b; s < e; ++s) {
          const int64_t v = s / OD, od = s % OD;
          const T* xp = xd + (v * D + od / scale) * H * W;
          T* yp = yd + s * OH * OW;
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow)
              yp[oh * OW + ow] = xp[(oh / scale) * W + ow / scale];
        }
      });
      return;
    }
    const auto td = detail::linear_taps<C>(D, OD, scale, align);
    const auto th = detail::linear_taps<C>(H, OH, scale, align);
    const auto tw = detail::linear_taps<C>(W, OW, scale, align);
    parallel_for(slices, grain(8 * OH * OW), [&](int64_t b, int64_t e) {
      for (int64_t s = b; s < e; ++s) {
        const int64_t v = s / OD, od = s % OD;
        const detail::Taps<C>& d = td[static_cast<std::size_t>(od)];
        const T* p0 = xd + (v * D + d.i0) * H * W;
        const T* p1 = xd + (v * D + d.i1) * H * W;
        T* yp = yd + s * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const detail::Taps<C>& h = th[static_cast<std::size_t>(oh)];
          for (int64_t ow = 0; ow < OW; ++ow) {
            const detail::Taps<C>& w = tw[static_cast<std::size_t>(ow)];
            // Bilinear on each of the two planes, then along D: PyTorch's nesting.
            auto bilinear = [&](const T* p) {
              const T* r0 = p + h.i0 * W;
              const T* r1 = p + h.i1 * W;
              const C v0 = w.l0 * static_cast<C>(r0[w.i0]) + w.l1 * static_cast<C>(r0[w.i1]);
              const C v1 = w.l0 * static_cast<C>(r1[w.i0]) + w.l1 * static_cast<C>(r1[w.i1]);
              return h.l0 * v0 + h.l1 * v1;
            };
            yp[oh * OW + ow] = T(d.l0 * bilinear(p0) + d.l1 * bilinear(p1));
          }
        }
      }
    });
  });
}

Tensor detail::upsample3d_backward(OnCpu, const Tensor& gy, const Shape& input_shape, int64_t scale,
                                   UpsampleMode mode, AlignCorners align) {
  Tensor gx = zeros(input_shape, {gy.dtype(), gy.device()});
  const int64_t D = gx.size(2), H = gx.size(3), W = gx.size(4);
  const int64_t OD = gy.size(2), OH = gy.size(3), OW = gy.size(4);
  dispatch_floating(gy.dtype(), "upsample_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* gyd = static_cast<const T*>(gy.data_ptr());
    T* gxd = static_cast<T*>(gx.data_ptr());
    const int64_t volumes = gx.size(0) * gx.size(1);
    if (mode == UpsampleMode::nearest) {
      // Each gx sums its own S × S × S block: a gather, so tasks over input slices never meet.
      parallel_for(volumes * D, grain(OH * OW * scale), [&](int64_t b, int64_t e) {
        for (int64_t s = b; s < e; ++s) {
          const int64_t v = s / D, id = s % D;
          const T* gyv = gyd + v * OD * OH * OW;
          T* gxp = gxd + s * H * W;
          for (int64_t ih = 0; ih < H; ++ih)
            for (int64_t iw = 0; iw < W; ++iw) {
              C sum = 0;
              for (int64_t k = id * scale; k < (id + 1) * scale; ++k)
                for (int64_t a = ih * scale; a < (ih + 1) * scale; ++a)
                  for (int64_t c = iw * scale; c < (iw + 1) * scale; ++c)
                    sum += static_cast<C>(gyv[(k * OH + a) * OW + c]);
              gxp[ih * W + iw] = T(sum);
            }
        }
      });
      return;
    }
    const auto td = detail::linear_taps<C>(D, OD, scale, align);
    const auto th = detail::linear_taps<C>(H, OH, scale, align);
    const auto tw = detail::linear_taps<C>(W, OW, scale, align);
    parallel_for(volumes, grain(8 * OD * OH * OW), [&](int64_t b, int64_t e) {
      for (int64_t v = b; v < e; ++v) {
        const T* gyv = gyd + v * OD * OH * OW;
        T* gxv = gxd + v * D * H * W;
        // 16-bit gradients would lose the small contributions scattered into one element:
        // accumulate the volume in the compute type, then store once.
        std::vector<C> acc(static_cast<std::size_t>(D * H * W), C(0));
        for (int64_t od = 0; od < OD; ++od) {
          const detail::Taps<C>& d = td[static_cast<std::size_t>(od)];
          for (int64_t oh = 0; oh < OH; ++oh) {
            const detail::Taps<C>& h = th[static_cast<std::size_t>(oh)];
            C* a00 = acc.data() + (d.i0 * H + h.i0) * W;
            C* a01 = acc.data() + (d.i0 * H + h.i1) * W;
            C* a10 = acc.data() + (d.i1 * H + h.i0) * W;
            C* a11 = acc.data() + (d.i1 * H + h.i1) * W;
            const C l00 = d.l0 * h.l0, l01 = d.l0 * h.l1, l10 = d.l1 * h.l0, l11 = d.l1 * h.l1;
            for (int64_t ow = 0; ow < OW; ++ow) {
              const detail::Taps<C>& w = tw[static_cast<std::size_t>(ow)];
              const C g = static_cast<C>(gyv[(od * OH + oh) * OW + ow]);
              // The order the GPU's gather repeats: (d, h, w) neighbours in lexicographic order.
              a00[w.i0] += l00 * w.l0 * g;
              a00[w.i1] += l00 * w.l1 * g;
              a01[w.i0] += l01 * w.l0 * g;
              a01[w.i1] += l01 * w.l1 * g;
              a10[w.i0] += l10 * w.l0 * g;
              a10[w.i1] += l10 * w.l1 * g;
              a11[w.i0] += l11 * w.l0 * g;
              a11[w.i1] += l11 * w.l1 * g;
            }
          }
        }
        for (int64_t i = 0; i < D * H * W; ++i) gxv[i] = T(acc[static_cast<std::size_t>(i)]);
      }
    });
  });
  return gx;
}

}  // namespace rg
