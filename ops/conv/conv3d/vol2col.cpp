#include "ops/conv/conv3d/vol2col.h"

#include <algorithm>

#include "core/half.h"

namespace rg {
namespace {

// Outputs o in [lo, hi) read input index o·s + off inside [0, n): computed once per row so the
// innermost loop has no bounds test.
struct Range {
  int64_t lo, hi;
};
Range valid_range(int64_t outputs, int64_t n, int64_t s, int64_t off) {
  const int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  const int64_t hi = n - 1 - off < 0 ? 0 : (n - 1 - off) / s + 1;
  const int64_t l = std::min(lo, outputs), h = std::clamp(hi, l, outputs);
  return {l, h};
}

// Calls f(row r, tap offsets {a, i, j}) for every row of channels [c0, c1), then for every
// output (od, oh) row of the slab that reads inside the volume, fn(out_row, in_row, range,
// stride_w, off_w); rows reading outside call skip(out_row, Wo).
template <class RowFn, class SkipFn>
void for_each_tap_row(const Vol2colGeometry& g, int64_t d0, int64_t d1, int64_t c0, int64_t c1,
                      int64_t ld, RowFn&& row_fn, SkipFn&& skip) {
  const int64_t kD = g.kernel[0], kH = g.kernel[1], kW = g.kernel[2];
  const int64_t Ho = g.out[1], Wo = g.out[2], D = g.depth, H = g.height, W = g.width;
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t a = 0; a < kD; ++a)
      for (int64_t i = 0; i < kH; ++i)
        for (int64_t j = 0; j < kW; ++j) {
          const int64_t r = ((c * kD + a) * kH + i) * kW + j;
          const int64_t off_w = j * g.dilation[2] - g.pad[2];
          const Range rw = valid_range(Wo, W, g.stride[2], off_w);
          for (int64_t od = d0; od < d1; ++od) {
            const int64_t id = od * g.stride[0] - g.pad[0] + a * g.dilation[0];
            const int64_t col0 = r * ld + (od - d0) * Ho * Wo;
            if (id < 0 || id >= D) {
              skip(col0, Ho * Wo);
              continue;
            }
            for (int64_t oh = 0; oh < Ho; ++oh) {
              const int64_t ih = oh * g.stride[1] - g.pad[1] + i * g.dilation[1];
              if (ih < 0 || ih >= H) {
                skip(col0 + oh * Wo, Wo);
                continue;
              }
              row_fn(col0 + oh * Wo, ((c * D + id) * H + ih) * W, rw, off_w);
            }
          }
        }
}

}  // namespace

template <class T>
void vol2col(const T* x, const Vol2colGeometry& g, int64_t d0, int64_t d1, int64_t c0, int64_t c1,
             T* col, int64_t ld) {
  const int64_t Wo = g.out[2], sW = g.stride[2];
  for_each_tap_row(
      g, d0, d1, c0, c1, ld,
      [&](int64_t out, int64_t in, Range rw, int64_t off_w) {
        T* dst = col + out;
        // Indices, not a pointer x + in + off_w: that may point before x (off_w < 0).
        const int64_t first = in + off_w;
        std::fill(dst, dst + rw.lo, T{});
        if (sW == 1 && rw.lo < rw.hi) {
          std::copy(x + first + rw.lo, x + first + rw.hi, dst + rw.lo);
        } else {
          for (int64_t ow = rw.lo; ow < rw.hi; ++ow) dst[ow] = x[first + ow * sW];
        }
        std::fill(dst + rw.hi, dst + Wo, T{});
      },
      [&](int64_t out, int64_t n) { std::fill(col + out, col + out + n, T{}); });
}

template <class T>
void col2vol(const T* col, int64_t ld, const Vol2colGeometry& g, int64_t d0, int64_t d1, int64_t c0,
             int64_t c1, T* x) {
  const int64_t sW = g.stride[2];
  for_each_tap_row(
      g, d0, d1, c0, c1, ld,
      [&](int64_t out, int64_t in, Range rw, int64_t off_w) {
        const T* src = col + out;
        const int64_t first = in + off_w;
        for (int64_t ow = rw.lo; ow < rw.hi; ++ow) x[first + ow * sW] += src[ow];
      },
      [](int64_t, int64_t) {});
}

template void vol2col<float>(const float*, const Vol2colGeometry&, int64_t, int64_t, int64_t,
                             int64_t, float*, int64_t);
template void vol2col<double>(const double*, const Vol2colGeometry&, int64_t, int64_t, int64_t,
                              int64_t, double*, int64_t);
// bf16: a copy, no widening (the bf16 tile GEMMs of conv3d_tiles.cpp read it as it is).
template void vol2col<BFloat16>(const BFloat16*, const Vol2colGeometry&, int64_t, int64_t, int64_t,
                                int64_t, BFloat16*, int64_t);
template void col2vol<float>(const float*, int64_t, const Vol2colGeometry&, int64_t, int64_t,
                             int64_t, int64_t, float*);
template void col2vol<double>(const double*, int64_t, const Vol2colGeometry&, int64_t, int64_t,
                              int64_t, int64_t, double*);

}  // namespace rg
