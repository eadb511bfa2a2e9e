#include "ops/conv/conv2d/im2col.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace rg {
namespace {

// Copies / adds n contiguous elements. CIFAR rows are 4 to 32 wide: a library call per row
// cost more than the copy itself (im2col took 30 % of a 4×4 convolution), so the common widths
// get fixed-size loops the compiler unrolls into a few vector moves.
template <int N, class T>
inline void copy_fixed(T* out, const T* in) {
  for (int k = 0; k < N; ++k) out[k] = in[k];
}
template <class T>
inline void copy_row(T* out, const T* in, int64_t n) {
  switch (n) {
    case 4:
      return copy_fixed<4>(out, in);
    case 8:
      return copy_fixed<8>(out, in);
    case 16:
      return copy_fixed<16>(out, in);
    case 32:
      return copy_fixed<32>(out, in);
    default:
      std::memcpy(out, in, static_cast<std::size_t>(n) * sizeof(T));
  }
}
template <class T>
inline void add_row(T* out, const T* in, int64_t n) {
  for (int64_t k = 0; k < n; ++k) out[k] += in[k];
}

// One channel with `pad` zeros around it, so that every tap of every output position is in
// bounds and the copy loops need no tests. Without padding the image itself is used.
template <class T>
struct Padded {
  int64_t width;  // row stride
  const T* data;
};

template <class T>
Padded<T> padded_channel(const T* xc, const Im2colGeometry& g, std::vector<T>& buf) {
  if (g.pad_h == 0 && g.pad_w == 0) return {g.width, xc};
  const int64_t Wp = g.width + 2 * g.pad_w, Hp = g.height + 2 * g.pad_h;
  buf.assign(static_cast<std::size_t>(Hp * Wp), T(0));
  for (int64_t h = 0; h < g.height; ++h)
    std::memcpy(buf.data() + (h + g.pad_h) * Wp + g.pad_w, xc + h * g.width,
                static_cast<std::size_t>(g.width) * sizeof(T));
  return {Wp, buf.data()};
}

}  // namespace

template <class T>
void im2col(const T* x, const Im2colGeometry& g, T* col, int64_t ld) {
  const int64_t Ho = g.out_h, Wo = g.out_w, sh = g.stride_h, sw = g.stride_w;
  thread_local std::vector<T> buf;
  for (int64_t c = 0; c < g.channels; ++c) {
    const Padded<T> xp = padded_channel(x + c * g.height * g.width, g, buf);
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        T* row = col + ((c * g.kernel_h + i) * g.kernel_w + j) * ld;
        // Output (ho, wo) reads padded pixel (ho·sH + i·dH, wo·sW + j·dW).
        const T* in = xp.data + i * g.dilation_h * xp.width + j * g.dilation_w;
        for (int64_t ho = 0; ho < Ho; ++ho) {
          const T* src = in + ho * sh * xp.width;
          T* out = row + ho * Wo;
          if (sw == 1) {
            copy_row(out, src, Wo);
          } else {
            for (int64_t wo = 0; wo < Wo; ++wo) out[wo] = src[wo * sw];
          }
        }
      }
    }
  }
}

template <class T>
void col2im(const T* col, int64_t ld, const Im2colGeometry& g, T* x) {
  const int64_t Ho = g.out_h, Wo = g.out_w, sh = g.stride_h, sw = g.stride_w;
  const bool padded = g.pad_h != 0 || g.pad_w != 0;
  const int64_t Wp = g.width + 2 * g.pad_w, Hp = g.height + 2 * g.pad_h;
  thread_local std::vector<T> buf;
  for (int64_t c = 0; c < g.channels; ++c) {
    T* xc = x + c * g.height * g.width;
    // Accumulate into a zero-padded channel (taps that land in the padding are dropped when
    // the interior is added to x), or straight into x when there is no padding.
    T* acc = xc;
    if (padded) {
      buf.assign(static_cast<std::size_t>(Hp * Wp), T(0));
      acc = buf.data();
    }
    const int64_t stride = padded ? Wp : g.width;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        const T* row = col + ((c * g.kernel_h + i) * g.kernel_w + j) * ld;
        T* out = acc + i * g.dilation_h * stride + j * g.dilation_w;
        for (int64_t ho = 0; ho < Ho; ++ho) {
          T* dst = out + ho * sh * stride;
          const T* src = row + ho * Wo;
          if (sw == 1) {
            add_row(dst, src, Wo);
          } else {
            for (int64_t wo = 0; wo < Wo; ++wo) dst[wo * sw] += src[wo];
          }
        }
      }
    }
    if (!padded) continue;
    for (int64_t h = 0; h < g.height; ++h)
      add_row(xc + h * g.width, acc + (h + g.pad_h) * Wp + g.pad_w, g.width);
  }
}

template void im2col<float>(const float*, const Im2colGeometry&, float*, int64_t);
template void im2col<double>(const double*, const Im2colGeometry&, double*, int64_t);
template void col2im<float>(const float*, int64_t, const Im2colGeometry&, float*);
template void col2im<double>(const double*, int64_t, const Im2colGeometry&, double*);

}  // namespace rg
