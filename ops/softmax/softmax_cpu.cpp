// CPU kernels of softmax and log_softmax, forward and backward.
//
// Layout: x seen as lanes (outer, size, inner) around `dim` (ops/reduction). The last dim
// (inner == 1, the classifier case) runs row by row; other dims walk a segment of neighbouring
// lanes side by side so every read is a contiguous row. Both vectorise (row_math.h).
// Accumulation: the sums (Σ exp, Σ gy·y, Σ gy) are taken in double — up to C terms, where a
// float sum would lose ~log2(C) bits; exp itself runs in the compute type.
// 16-bit dtypes are widened to float per row (row_math::load/store).
#include <algorithm>
#include <cmath>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/reduction/reduction.h"
#include "ops/reduction/row_math.h"
#include "ops/softmax/softmax_kernel.h"

namespace rg::detail {
namespace {
using namespace rg::row_math;

template <class T>
void forward_rows(const T* px, T* py, const Lanes& l, int64_t b, int64_t e, SoftmaxKind kind) {
  using C = compute_t<T>;
  const int64_t n = l.size;
  std::vector<C> xbuf = staging<T>(n), ybuf = staging<T>(n);
  for (int64_t row = b; row < e; ++row) {
    const C* x = load(px + row * n, n, xbuf);
    C* y = out_buffer(py + row * n, ybuf);
    const C m = max_of(x, n);
    exp_shifted(x, m, y, n);  // y holds exp(x − m) for the sum
    const double s = sum_as_double(y, n);
    if (kind == SoftmaxKind::softmax)
      view(y, n) *= static_cast<C>(1.0 / s);
    else  // (x − m) − log s, in this order: x − m is exact near the max, where it matters
      view(y, n) = (view(x, n) - m) - static_cast<C>(std::log(s));
    store(y, py + row * n, n);
  }
}

template <class T>
void forward_segments(const T* px, T* py, const Lanes& l, int64_t b, int64_t e, SoftmaxKind kind) {
  using C = compute_t<T>;
  const int64_t seg = std::min(l.inner, e - b);
  std::vector<C> m(seg), tmp(seg), xbuf = staging<T>(seg), ybuf = staging<T>(seg);
  std::vector<double> s(seg);
  for_segments(b, e, l.inner, [&](int64_t a, int64_t i0, int64_t i1) {
    const int64_t len = i1 - i0;
    const T* xa = px + a * l.size * l.inner + i0;
    T* ya = py + a * l.size * l.inner + i0;
    std::copy_n(load(xa, len, xbuf), len, m.begin());
    for (int64_t c = 1; c < l.size; ++c) max_into(m.data(), load(xa + c * l.inner, len, xbuf), len);
    std::fill_n(s.begin(), len, 0.0);
    for (int64_t c = 0; c < l.size; ++c) {
      exp_shifted(load(xa + c * l.inner, len, xbuf), m.data(), tmp.data(), len);
      for (int64_t i = 0; i < len; ++i) s[i] += tmp[i];
    }
    if (kind == SoftmaxKind::softmax) {
      for (int64_t i = 0; i < len; ++i) s[i] = 1.0 / s[i];
      for (int64_t c = 0; c < l.size; ++c) {
        C* y = out_buffer(ya + c * l.inner, ybuf);
        exp_shifted(load(xa + c * l.inner, len, xbuf), m.data(), y, len);
        for (int64_t i = 0; i < len; ++i) y[i] *= static_cast<C>(s[i]);
        store(y, ya + c * l.inner, len);
      }
    } else {
      for (int64_t i = 0; i < len; ++i) s[i] = std::log(s[i]);
      for (int64_t c = 0; c < l.size; ++c) {
        const C* x = load(xa + c * l.inner, len, xbuf);
        C* y = out_buffer(ya + c * l.inner, ybuf);
        for (int64_t i = 0; i < len; ++i) y[i] = (x[i] - m[i]) - static_cast<C>(s[i]);
        store(y, ya + c * l.inner, len);
      }
    }
  });
}

template <class T>
void backward_rows(const T* pg, const T* py, T* px, const Lanes& l, int64_t b, int64_t e,
                   SoftmaxKind kind) {
  using C = compute_t<T>;
  const int64_t n = l.size;
  std::vector<C> gbuf = staging<T>(n), ybuf = staging<T>(n), xbuf = staging<T>(n), tmp(n);
  for (int64_t row = b; row < e; ++row) {
    const C* g = load(pg + row * n, n, gbuf);
    const C* y = load(py + row * n, n, ybuf);
    C* gx = out_buffer(px + row * n, xbuf);
    if (kind == SoftmaxKind::softmax) {
      const C dot = static_cast<C>(dot_as_double(g, y, n));
      view(gx, n) = view(y, n) * (view(g, n) - dot);
    } else {
      const C sg = static_cast<C>(sum_as_double(g, n));
      exp_shifted(y, C(0), tmp.data(), n);
      view(gx, n) = view(g, n) - view(tmp.data(), n) * sg;
    }
    store(gx, px + row * n, n);
  }
}

template <class T>
void backward_segments(const T* pg, const T* py, T* px, const Lanes& l, int64_t b, int64_t e,
                       SoftmaxKind kind) {
  using C = compute_t<T>;
  const int64_t seg = std::min(l.inner, e - b);
  std::vector<C> gbuf = staging<T>(seg), ybuf = staging<T>(seg), xbuf = staging<T>(seg), tmp(seg);
  std::vector<double> acc(seg);
  const bool soft = kind == SoftmaxKind::softmax;
  for_segments(b, e, l.inner, [&](int64_t a, int64_t i0, int64_t i1) {
    const int64_t len = i1 - i0, base = a * l.size * l.inner + i0;
    std::fill_n(acc.begin(), len, 0.0);
    for (int64_t c = 0; c < l.size; ++c) {
      const C* g = load(pg + base + c * l.inner, len, gbuf);
      const C* y = load(py + base + c * l.inner, len, ybuf);
      for (int64_t i = 0; i < len; ++i) acc[i] += soft ? double(g[i]) * double(y[i]) : g[i];
    }
    for (int64_t c = 0; c < l.size; ++c) {
      const C* g = load(pg + base + c * l.inner, len, gbuf);
      const C* y = load(py + base + c * l.inner, len, ybuf);
      C* gx = out_buffer(px + base + c * l.inner, xbuf);
      if (soft) {
        for (int64_t i = 0; i < len; ++i) gx[i] = y[i] * (g[i] - static_cast<C>(acc[i]));
      } else {
        exp_shifted(y, C(0), tmp.data(), len);
        for (int64_t i = 0; i < len; ++i) gx[i] = g[i] - tmp[i] * static_cast<C>(acc[i]);
      }
      store(gx, px + base + c * l.inner, len);
    }
  });
}

}  // namespace

Tensor softmax_forward(OnCpu, const Tensor& x_in, int64_t dim, SoftmaxKind kind) {
  const Tensor x = x_in.contiguous();
  Tensor y = empty(x.shape(), {x.dtype(), x.device()});
  if (x.numel() == 0) return y;
  const Lanes l = lanes_around(x.shape(), dim);
  const char* op = kind == SoftmaxKind::softmax ? "softmax" : "log_softmax";
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.data_ptr());
    T* py = static_cast<T*>(y.data_ptr());
    parallel_for(l.count(), lane_grain(l), [&](int64_t b, int64_t e) {
      if (l.inner == 1)
        forward_rows(px, py, l, b, e, kind);
      else
        forward_segments(px, py, l, b, e, kind);
    });
  });
  return y;
}

Tensor softmax_backward(OnCpu, const Tensor& gy_in, const Tensor& y_in, int64_t dim,
                        SoftmaxKind kind) {
  const Tensor gy = gy_in.contiguous(), y = y_in.contiguous();
  Tensor gx = empty(y.shape(), {y.dtype(), y.device()});
  if (y.numel() == 0) return gx;
  const Lanes l = lanes_around(y.shape(), dim);
  dispatch_floating(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* pg = static_cast<const T*>(gy.data_ptr());
    const T* py = static_cast<const T*>(y.data_ptr());
    T* px = static_cast<T*>(gx.data_ptr());
    parallel_for(l.count(), lane_grain(l), [&](int64_t b, int64_t e) {
      if (l.inner == 1)
        backward_rows(pg, py, px, l, b, e, kind);
      else
        backward_segments(pg, py, px, l, b, e, kind);
    });
  });
  return gx;
}

}  // namespace rg::detail
