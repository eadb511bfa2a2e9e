// CPU kernels of max_pool2d: one task per (n, c) plane, so a backward scatter never races
// (all windows of a plane write into that plane only).
#include <cmath>
#include <limits>
#include <type_traits>
#if defined(__AVX512F__)
// GCC 12 warns "__Y may be used uninitialized" inside its own avx512fintrin.h (GCC bug 105593,
// _mm512_undefined_*): a false positive, silenced for this file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/max_pool2d/max_pool2d_kernel.h"

namespace rg {

namespace {

// One output row of the 2x2/2 pool over input rows r0 and r1 (the window of output j is
// r0[2j], r0[2j+1], r1[2j], r1[2j+1], taken in that order: the first maximum wins, a NaN
// replaces — the comparisons of the general loop). `base` is r0's offset in its plane.
// Branch-free: which of four values wins is data-dependent, and a mispredicted branch per
// output cost more than the loads. f32 on AVX-512 runs 16 outputs per step.
template <class T, class C>
void max_pool_2x2_row(const T* r0, const T* r1, int64_t w, int64_t base, int64_t ow, T* y,
                      int64_t* idx) {
  int64_t j = 0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    // Lanes 0..15 of (a, b) = 32 consecutive inputs: the even ones are each window's left
    // column, the odd ones its right column.
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512i lane2 = _mm512_slli_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 1);
    for (; j + 16 <= ow; j += 16) {
      const __m512 a0 = _mm512_loadu_ps(r0 + 2 * j), b0 = _mm512_loadu_ps(r0 + 2 * j + 16);
      const __m512 a1 = _mm512_loadu_ps(r1 + 2 * j), b1 = _mm512_loadu_ps(r1 + 2 * j + 16);
      __m512 best = _mm512_permutex2var_ps(a0, even, b0);
      __m512i offset = _mm512_setzero_si512();  // of the winner within the window: 0, 1, w, w+1
      auto consider = [&](__m512 v, int32_t off) {
        const __mmask16 take =
            _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        best = _mm512_mask_blend_ps(take, best, v);
        offset = _mm512_mask_blend_epi32(take, offset, _mm512_set1_epi32(off));
      };
      consider(_mm512_permutex2var_ps(a0, odd, b0), 1);
      consider(_mm512_permutex2var_ps(a1, even, b1), static_cast<int32_t>(w));
      consider(_mm512_permutex2var_ps(a1, odd, b1), static_cast<int32_t>(w + 1));
      _mm512_storeu_ps(y + j, best);
      // index = base + 2·(j + lane) + offset, in int64, eight lanes at a time.
      const __m512i local = _mm512_add_epi32(lane2, offset);
      const __m512i start = _mm512_set1_epi64(base + 2 * j);
      _mm512_storeu_si512(
          idx + j, _mm512_add_epi64(start, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(local))));
      _mm512_storeu_si512(
          idx + j + 8,
          _mm512_add_epi64(start, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(local, 1))));
    }
  }
#endif
  for (; j < ow; ++j) {
    const int64_t i0 = base + 2 * j;
    C best = static_cast<C>(r0[2 * j]);
    int64_t best_i = i0;
    auto consider = [&](C v, int64_t i) {
      const bool take = v > best || v != v;
      best = take ? v : best;
      best_i = take ? i : best_i;
    };
    consider(static_cast<C>(r0[2 * j + 1]), i0 + 1);
    consider(static_cast<C>(r1[2 * j]), i0 + w);
    consider(static_cast<C>(r1[2 * j + 1]), i0 + w + 1);
    y[j] = T(best);
    idx[j] = best_i;
  }
}

}  // namespace

namespace detail {

void max_pool2d_forward(OnCpu, const Tensor& x, const Pool2dGeometry& g, const Tensor& output,
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
    // The 2x2/2 pool with every window inside the image (no padding, no dilation, no ceil-mode
    // overhang) — airbench's pools — has its own branch-free kernel; the same comparisons, so
    // the same results.
    const bool two_by_two = KH == 2 && KW == 2 && SH == 2 && SW == 2 && PH == 0 && PW == 0 &&
                            DH == 1 && DW == 1 && (OH - 1) * SH + KH <= H &&
                            (OW - 1) * SW + KW <= W;
    parallel_for(g.n * g.c, plane_grain(OH * OW * KH * KW), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const T* xp = xd + p * H * W;
        T* yp = yd + p * OH * OW;
        int64_t* ip = id + p * OH * OW;
        if (two_by_two) {
          for (int64_t oh = 0; oh < OH; ++oh)
            max_pool_2x2_row<T, C>(xp + 2 * oh * W, xp + (2 * oh + 1) * W, W, 2 * oh * W, OW,
                                   yp + oh * OW, ip + oh * OW);
          continue;
        }
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

Tensor max_pool2d_backward(OnCpu, const Tensor& gy, const Tensor& indices,
                           const Pool2dGeometry& g) {
  Tensor gx = zeros({g.n, g.c, g.h, g.w}, {gy.dtype(), gy.device()});
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
  return gx;
}

}  // namespace detail
}  // namespace rg
