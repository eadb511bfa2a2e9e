#include "ops/im2col/im2col.h"

#include <algorithm>
#include <cstring>

namespace rg {
namespace {

// The output columns wo whose input column wo·s − p + off lies in [0, W): [lo, hi).
// Computed once per row so the inner loops have no bounds tests.
void valid_range(int64_t off, int64_t s, int64_t w, int64_t wo_count, int64_t& lo, int64_t& hi) {
  // wo·s + off >= 0  <=>  wo >= ceil(−off / s)
  lo = off >= 0 ? 0 : (-off + s - 1) / s;
  // wo·s + off <= W − 1  <=>  wo <= floor((W − 1 − off) / s)
  hi = w - 1 - off < 0 ? 0 : (w - 1 - off) / s + 1;
  lo = std::min(lo, wo_count);
  hi = std::clamp(hi, lo, wo_count);
}

}  // namespace

template <class T>
void im2col(const T* x, const Im2colGeometry& g, T* col, int64_t ld) {
  const int64_t Ho = g.out_h, Wo = g.out_w;
  for (int64_t c = 0; c < g.channels; ++c) {
    const T* xc = x + c * g.height * g.width;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        T* row = col + ((c * g.kernel_h + i) * g.kernel_w + j) * ld;
        const int64_t w_off = j * g.dilation_w - g.pad_w;
        int64_t lo, hi;
        valid_range(w_off, g.stride_w, g.width, Wo, lo, hi);
        for (int64_t ho = 0; ho < Ho; ++ho) {
          T* out = row + ho * Wo;
          const int64_t h = ho * g.stride_h - g.pad_h + i * g.dilation_h;
          if (h < 0 || h >= g.height) {
            std::fill(out, out + Wo, T(0));
            continue;
          }
          const T* in = xc + h * g.width;  // indexed by wo·sW + w_off, in [0, W) for lo <= wo < hi
          std::fill(out, out + lo, T(0));
          if (g.stride_w == 1) {
            std::memcpy(out + lo, in + lo + w_off, static_cast<std::size_t>(hi - lo) * sizeof(T));
          } else {
            for (int64_t wo = lo; wo < hi; ++wo) out[wo] = in[wo * g.stride_w + w_off];
          }
          std::fill(out + hi, out + Wo, T(0));
        }
      }
    }
  }
}

template <class T>
void col2im(const T* col, int64_t ld, const Im2colGeometry& g, T* x) {
  const int64_t Ho = g.out_h, Wo = g.out_w;
  for (int64_t c = 0; c < g.channels; ++c) {
    T* xc = x + c * g.height * g.width;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        const T* row = col + ((c * g.kernel_h + i) * g.kernel_w + j) * ld;
        const int64_t w_off = j * g.dilation_w - g.pad_w;
        int64_t lo, hi;
        valid_range(w_off, g.stride_w, g.width, Wo, lo, hi);
        for (int64_t ho = 0; ho < Ho; ++ho) {
          const int64_t h = ho * g.stride_h - g.pad_h + i * g.dilation_h;
          if (h < 0 || h >= g.height) continue;
          const T* in = row + ho * Wo;
          T* out = xc + h * g.width;
          if (g.stride_w == 1) {
            for (int64_t wo = lo; wo < hi; ++wo) out[wo + w_off] += in[wo];
          } else {
            for (int64_t wo = lo; wo < hi; ++wo) out[wo * g.stride_w + w_off] += in[wo];
          }
        }
      }
    }
  }
}

template void im2col<float>(const float*, const Im2colGeometry&, float*, int64_t);
template void im2col<double>(const double*, const Im2colGeometry&, double*, int64_t);
template void col2im<float>(const float*, int64_t, const Im2colGeometry&, float*);
template void col2im<double>(const double*, int64_t, const Im2colGeometry&, double*);

}  // namespace rg
