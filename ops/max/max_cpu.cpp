// max on the CPU: vectorised row maxima (row_math) and a scan for the first occurrence; lanes
// across the inner dim walked side by side, so each pass reads a contiguous row.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <type_traits>
#include <utility>

#include "core/thread_pool.h"
#include "ops/elementwise/elementwise.h"
#include "ops/max/max_functors.h"
#include "ops/max/max_kernel.h"
#include "ops/reduction/row_math.h"

namespace rg::detail {
namespace {

// The NaN-propagating max of a contiguous run: vectorised for f32/f64 (row_math), a plain loop
// for the 16-bit types.
template <class T>
compute_t<T> lane_max(const T* p, int64_t n) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, C>) {
    return row_math::max_of(p, n);
  } else {
    C best = static_cast<C>(p[0]);
    for (int64_t i = 1; i < n; ++i) best = nan_max(best, static_cast<C>(p[i]));
    return best;
  }
}

}  // namespace

Tensor max_all(OnCpu, const Tensor& x) {
  Tensor y = empty({}, {x.dtype(), x.device()});
  dispatch_floating(x.dtype(), "max", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = static_cast<const T*>(x.data_ptr());
    // One partial maximum per chunk, combined in index order (deterministic NaN choice).
    std::mutex mutex;
    std::vector<std::pair<int64_t, C>> parts;
    parallel_for(x.numel(), 1 << 15, [&](int64_t b, int64_t e) {
      const C best = lane_max(px + b, e - b);
      std::lock_guard<std::mutex> lock(mutex);
      parts.emplace_back(b, best);
    });
    std::sort(parts.begin(), parts.end(),
              [](const auto& p, const auto& q) { return p.first < q.first; });
    C best = parts[0].second;
    for (const auto& part : parts)
      if (max_beats(part.second, best)) best = part.second;
    *static_cast<T*>(y.data_ptr()) = T(best);
  });
  return y;
}

MaxResult max_along(OnCpu, const Tensor& x, int64_t dim, const Shape& out_shape) {
  const Lanes l = lanes_around(x.shape(), dim);
  MaxResult r{empty(out_shape, {x.dtype(), x.device()}),
              empty(out_shape, {DType::i64, x.device()})};
  dispatch_floating(x.dtype(), "max", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = static_cast<const T*>(x.data_ptr());
    T* pv = static_cast<T*>(r.values.data_ptr());
    int64_t* pi = r.indices.data<int64_t>();
    parallel_for(l.count(), lane_grain(l), [&](int64_t b, int64_t e) {
      if (l.inner == 1) {
        // Rows: a vectorised max, then a scan for its first occurrence (usually short).
        for (int64_t row = b; row < e; ++row) {
          const T* xr = px + row * l.size;
          const C m = lane_max(xr, l.size);
          int64_t k = 0;
          if (std::isnan(m))
            while (!std::isnan(static_cast<C>(xr[k]))) ++k;
          else
            while (static_cast<C>(xr[k]) != m) ++k;
          pv[row] = T(m);
          pi[row] = k;
        }
        return;
      }
      std::vector<C> best(static_cast<std::size_t>(std::min(l.inner, e - b)));
      std::vector<int64_t> arg(best.size());
      for_segments(b, e, l.inner, [&](int64_t a, int64_t i0, int64_t i1) {
        // Walk the lanes of this segment side by side: row c of all of them is contiguous.
        const T* base = px + a * l.size * l.inner;
        for (int64_t i = i0; i < i1; ++i) best[i - i0] = static_cast<C>(base[i]), arg[i - i0] = 0;
        for (int64_t c = 1; c < l.size; ++c) {
          const T* row = base + c * l.inner;
          for (int64_t i = i0; i < i1; ++i) {
            const C v = static_cast<C>(row[i]);
            if (max_beats(v, best[i - i0])) best[i - i0] = v, arg[i - i0] = c;
          }
        }
        for (int64_t i = i0; i < i1; ++i) {
          pv[a * l.inner + i] = T(best[i - i0]);
          pi[a * l.inner + i] = arg[i - i0];
        }
      });
    });
  });
  return r;
}

Tensor max_all_backward(OnCpu, const Tensor& gy, const Tensor& x_in, const Tensor& y) {
  const Tensor x = x_in.contiguous();
  int64_t count = 0;
  dispatch_floating(x.dtype(), "max_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = static_cast<const T*>(x.data_ptr());
    const C m = static_cast<C>(*static_cast<const T*>(y.data_ptr()));
    for (int64_t i = 0; i < x.numel(); ++i) count += static_cast<C>(px[i]) == m;
  });
  const double inv = count > 0 ? 1.0 / static_cast<double>(count) : 0.0;
  return pointwise("max_backward", MaxAllGradFn{inv}, gy, x, y);
}

Tensor max_along_backward(OnCpu, const Tensor& gy_in, const Tensor& indices, const Shape& x_shape,
                          int64_t dim) {
  const Tensor gy = gy_in.contiguous();
  Tensor gx = zeros(x_shape, {gy.dtype(), gy.device()});
  const Lanes l = lanes_around(x_shape, dim);
  const int64_t* idx = indices.data<int64_t>();
  dispatch_floating(gy.dtype(), "max_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* pg = static_cast<const T*>(gy.data_ptr());
    T* px = static_cast<T*>(gx.data_ptr());
    // gy and indices are laid out as lanes (a, i); each lane writes one element of gx.
    parallel_for(l.count(), 1 << 15, [&](int64_t b, int64_t e) {
      for (int64_t lane = b; lane < e; ++lane) {
        const int64_t a = lane / l.inner, i = lane % l.inner;
        px[(a * l.size + idx[lane]) * l.inner + i] = pg[lane];
      }
    });
  });
  return gx;
}

}  // namespace rg::detail
