// CPU kernels of batch_norm: per-channel reductions and per-element passes.
//
// Accumulation: every sum is in f64, and the variance is never E[x²] − E[x]² of the raw
// values. In f32 that formula cancels catastrophically when |mean| ≫ std (a channel at
// 1000 ± 0.01 loses every digit of its variance), and an f32 running sum over the M = N·H·W
// values of a channel (131072 for a 128×32×32 batch) can drift by up to M·ε relative. The
// statistics are one pass over values shifted by one of them (bound in bn_stats_cpu), in f64
// with a fixed lane layout: errors near 1e-11 at worst, deterministic.
// Element passes also compute in f64 (x − mean before scaling, so a large mean does not cancel
// against the shift); they are memory-bound, so the wider arithmetic is nearly free.
#include <algorithm>
#include <array>
#include <type_traits>
#include <vector>

#include "core/dispatch.h"
#include "core/half_runs.h"
#include "core/thread_pool.h"
#include "ops/batch_norm/batch_norm_kernels.h"
#include "ops/batch_norm/batch_norm_math.h"

namespace rg::detail {
namespace {

// Eight independent partial sums: the additions of one lane form a dependency chain, eight
// chains run in parallel (and vectorise) instead of one add per FP-latency. The order of every
// addition is fixed by the data layout alone.
struct Lanes {
  double v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  template <class F>
  void add(int64_t len, F f) {
    int64_t i = 0;
    for (; i + 8 <= len; i += 8)
      for (int j = 0; j < 8; ++j) v[j] += f(i + j);
    for (int j = 0; i < len; ++i, ++j) v[j] += f(i);
  }
  // this += f(i), sq += f(i)², i < len: two sums from one read of the data.
  template <class F>
  void add2(Lanes& sq, int64_t len, F f) {
    int64_t i = 0;
    for (; i + 8 <= len; i += 8)
      for (int j = 0; j < 8; ++j) {
        const double e = f(i + j);
        v[j] += e;
        sq.v[j] += e * e;
      }
    for (int j = 0; i < len; ++i, ++j) {
      const double e = f(i);
      v[j] += e;
      sq.v[j] += e * e;
    }
  }
  double total() const { return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])); }
};

template <class T>
inline double ld(T v) {
  return convert<double>(v);
}

// A plane's values, readable element by element: f16 planes are first widened to f32 in
// `buffer` with the vectorised conversion (core/half_runs.h) — one scalar software conversion
// per element would cost more than the reduction itself; other dtypes are read in place.
template <class T>
const T* readable(const T* plane, int64_t, std::vector<float>&) {
  return plane;
}
inline const float* readable(const Half* plane, int64_t n, std::vector<float>& buffer) {
  buffer.resize(static_cast<std::size_t>(n));
  widen(plane, buffer.data(), n);
  return buffer.data();
}

// The arithmetic type of the element passes. f32 and f64 data: f64, rounded once into T.
// 16-bit data: f32, as cuDNN does — its error (~1e-7) is far below a 16-bit ulp (~1e-3), the
// result is rounded once from f32 to 16 bits, and f64 would cost a round-to-odd step per
// element (the correctly rounded double -> half path) that made these passes 5x slower.
template <class T>
using ElemtType = std::conditional_t<sizeof(T) == 2, float, double>;

// Per-channel sums over the whole batch, NS of them per channel: plane(n, c, sums) adds the
// values of plane (n, c) into sums[0..NS); the totals land in totals[k][c].
// The batch is cut into at most kSlices slices of whole images, fixed by N alone. Each slice
// is read image by image, in memory order: a walk channel by channel jumps C·S values after
// every S and restarts the hardware prefetcher each time (the reductions ran at half the
// bandwidth of the element passes). Slices are then added in order, so the result does not
// depend on the thread count.
constexpr int64_t kSlices = 8;
template <int NS, class Plane>
void channel_sums(const BnDims& d, Plane plane, std::array<double*, NS> totals) {
  const int64_t slices = std::min(d.n, kSlices);
  std::vector<Lanes> acc(static_cast<std::size_t>(slices * d.c * NS));
  const int64_t slice_values = d.n * d.c * d.s / std::max<int64_t>(slices, 1);
  parallel_for(slices, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(slice_values, 1)),
               [&](int64_t s0, int64_t s1) {
                 for (int64_t sl = s0; sl < s1; ++sl)
                   for (int64_t n = sl * d.n / slices; n < (sl + 1) * d.n / slices; ++n)
                     for (int64_t c = 0; c < d.c; ++c)
                       plane(n, c, acc.data() + (sl * d.c + c) * NS);
               });
  for (int64_t c = 0; c < d.c; ++c)
    for (int k = 0; k < NS; ++k) {
      double t = 0;
      for (int64_t sl = 0; sl < slices; ++sl)
        t += acc[static_cast<std::size_t>((sl * d.c + c) * NS + k)].total();
      totals[static_cast<std::size_t>(k)][c] = t;
    }
}

// f(std::integral_constant<BnActivation, act>{}): the element loops get the activation as a
// constant, so that each is compiled (and vectorised) without a branch per element.
template <class F>
void with_activation(BnActivation act, F f) {
  using enum BnActivation;
  switch (act) {
    case none:
      return f(std::integral_constant<BnActivation, none>{});
    case relu:
      return f(std::integral_constant<BnActivation, relu>{});
    case gelu:
      return f(std::integral_constant<BnActivation, gelu>{});
  }
}

// Planes per parallel_for chunk: enough values that a chunk outweighs the thread hand-off.
int64_t plane_grain(const BnDims& d) {
  return std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(d.s, 1));
}

}  // namespace

BnDims bn_dims(const Tensor& x) {
  BnDims d;
  d.n = x.size(0);
  d.c = x.size(1);
  for (int64_t i = 2; i < x.dim(); ++i) d.s *= x.size(i);
  return d;
}

void bn_stats_cpu(const Tensor& x, double* mean, double* m2) {
  const BnDims d = bn_dims(x);
  const int64_t count = d.n * d.s;
  if (count == 0) {
    std::fill(mean, mean + d.c, 0.0);
    std::fill(m2, m2 + d.c, 0.0);
    return;
  }
  dispatch_floating(x.dtype(), "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.data_ptr());
    // One pass over the data, shifted by a value of the channel: sums of e = x − k and e²
    // give mean = k + Σe/M and M2 = Σe² − (Σe)²/M, at half the memory traffic of the
    // two-pass Σ(x − mean)². The subtraction magnifies the rounding of the f64 sums by
    // Σe²/M2 = 1 + M·(mean − k)²/M2: about 1 + (mean − k)²/var, a few units when k is a
    // typical value, and at most 1 + M since k is one of the values ((k − mean)² <= M2).
    // Even that worst case (1e5 × f64 rounding) stays far below f32 resolution.
    std::vector<double> k(static_cast<std::size_t>(d.c)), s1(k.size()), s2(k.size());
    for (int64_t c = 0; c < d.c; ++c) k[static_cast<std::size_t>(c)] = ld(px[c * d.s]);
    channel_sums<2>(d,
                    [&](int64_t n, int64_t c, Lanes* sums) {
                      thread_local std::vector<float> buffer;
                      const auto* p = readable(px + (n * d.c + c) * d.s, d.s, buffer);
                      const double kc = k[static_cast<std::size_t>(c)];
                      sums[0].add2(sums[1], d.s, [&](int64_t i) { return ld(p[i]) - kc; });
                    },
                    {s1.data(), s2.data()});
    const double cnt = static_cast<double>(count);
    for (std::size_t c = 0; c < k.size(); ++c) {
      mean[c] = k[c] + s1[c] / cnt;
      m2[c] = std::max(0.0, s2[c] - s1[c] * (s1[c] / cnt));
    }
  });
}

BnActGrad act_grad_of(const BnActSaved& saved) {
  if (saved.act == BnActivation::none) return {};
  return {saved.act, saved.scale.data<double>(), saved.shift.data<double>()};
}

void bn_elemt_cpu(const Tensor& x, const Tensor& y, const double* mean, const double* scale,
                  const double* shift, BnActivation act) {
  const BnDims d = bn_dims(x);
  dispatch_floating(x.dtype(), "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.data_ptr());
    T* py = static_cast<T*>(y.data_ptr());
    using A = ElemtType<T>;
    using G = compute_t<T>;  // the activation's type (bn_math::activate)
    with_activation(act, [&](auto act_tag) {
      constexpr BnActivation kAct = decltype(act_tag)::value;
      // Without an activation, batch_norm's multiply-add (the fused ops' fma is for their
      // backward's recomputation).
      auto value = [](A xv, A mu, A k, A b) {
        if constexpr (kAct == BnActivation::none) return (xv - mu) * k + b;
        return bn_math::activate<G>(kAct, bn_math::affine(xv, mu, k, b));
      };
      parallel_for(d.n * d.c, plane_grain(d), [&](int64_t r0, int64_t r1) {
        std::vector<float> row(std::is_same_v<T, Half> ? static_cast<std::size_t>(d.s) : 0);
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t c = r % d.c;
          const A mu = static_cast<A>(mean[c]), k = static_cast<A>(scale[c]);
          const A b = static_cast<A>(shift[c]);
          const T* p = px + r * d.s;
          T* q = py + r * d.s;
          if constexpr (std::is_same_v<T, Half>) {  // through f32 rows: vectorised conversions
            widen(p, row.data(), d.s);
            for (int64_t i = 0; i < d.s; ++i) row[i] = value(row[i], mu, k, b);
            narrow(row.data(), q, d.s);
          } else {
            for (int64_t i = 0; i < d.s; ++i) q[i] = convert<T>(value(convert<A>(p[i]), mu, k, b));
          }
        }
      });
    });
  });
}

void bn_backward_reduce_cpu(const Tensor& gy, const Tensor& x, const double* mean, double* sum_dy,
                            double* sum_dy_xmu, const BnActGrad& act) {
  const BnDims d = bn_dims(x);
  dispatch_floating(x.dtype(), "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* pg = static_cast<const T*>(gy.data_ptr());
    with_activation(act.act, [&](auto act_tag) {
      constexpr BnActivation kAct = decltype(act_tag)::value;
      channel_sums<2>(
          d,
          [&](int64_t n, int64_t c, Lanes* sums) {
            const int64_t base = (n * d.c + c) * d.s;
            thread_local std::vector<float> x_buffer, g_buffer;
            const auto* p = readable(px + base, d.s, x_buffer);
            const auto* g = readable(pg + base, d.s, g_buffer);
            const double mu = mean[c];
            if constexpr (kAct != BnActivation::none) {
              // gy through the activation's derivative into a row first (a select or gelu's
              // select-based math, both of which the compiler vectorises), then the plain sums
              // over that row. v in the forward's arithmetic type: the same v as it computed.
              using A = ElemtType<T>;
              using G = compute_t<T>;
              const A am = static_cast<A>(mu), k = static_cast<A>(act.scale[c]);
              const A b = static_cast<A>(act.shift[c]);
              thread_local std::vector<double> through;
              through.resize(static_cast<std::size_t>(d.s));
              for (int64_t i = 0; i < d.s; ++i)
                through[i] = static_cast<double>(bn_math::activation_grad<G>(
                    kAct, convert<A>(g[i]), bn_math::affine(convert<A>(p[i]), am, k, b)));
              const double* gt = through.data();
              sums[0].add(d.s, [&](int64_t i) { return gt[i]; });
              sums[1].add(d.s, [&](int64_t i) { return gt[i] * (ld(p[i]) - mu); });
              return;
            }
            sums[0].add(d.s, [&](int64_t i) { return ld(g[i]); });
            sums[1].add(d.s, [&](int64_t i) { return ld(g[i]) * (ld(p[i]) - mu); });
          },
          {sum_dy, sum_dy_xmu});
    });
  });
}

void bn_backward_elemt_cpu(const Tensor& gy, const Tensor& x, const Tensor& gx, const double* mean,
                           const double* k, const double* a, const double* b,
                           const BnActGrad& act) {
  const BnDims d = bn_dims(x);
  dispatch_floating(x.dtype(), "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* pg = static_cast<const T*>(gy.data_ptr());
    T* out = static_cast<T*>(gx.data_ptr());
    using A = ElemtType<T>;
    using G = compute_t<T>;
    with_activation(act.act, [&](auto act_tag) {
      constexpr BnActivation kAct = decltype(act_tag)::value;
      parallel_for(d.n * d.c, plane_grain(d), [&](int64_t r0, int64_t r1) {
        const std::size_t len = std::is_same_v<T, Half> ? static_cast<std::size_t>(d.s) : 0;
        std::vector<float> row(len), grow(len);
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t c = r % d.c;
          const A mu = static_cast<A>(mean[c]), kc = static_cast<A>(k[c]);
          const A ac = static_cast<A>(a[c]), bc = static_cast<A>(b[c]);
          // The forward's scale and shift (unused without an activation).
          const A fk = kAct == BnActivation::none ? A(0) : static_cast<A>(act.scale[c]);
          const A fb = kAct == BnActivation::none ? A(0) : static_cast<A>(act.shift[c]);
          // gy through the activation at the forward's v (gy itself without one).
          auto through = [&](A gv, A xv) {
            if constexpr (kAct == BnActivation::none) return gv;
            return bn_math::activation_grad<G>(kAct, gv, bn_math::affine(xv, mu, fk, fb));
          };
          const T* p = px + r * d.s;
          const T* g = pg + r * d.s;
          T* q = out + r * d.s;
          if constexpr (std::is_same_v<T, Half>) {  // through f32 rows: vectorised conversions
            widen(g, grow.data(), d.s);
            widen(p, row.data(), d.s);
            for (int64_t i = 0; i < d.s; ++i)
              row[i] = (through(grow[i], row[i]) - ac - (row[i] - mu) * bc) * kc;
            narrow(row.data(), q, d.s);
          } else {
            for (int64_t i = 0; i < d.s; ++i) {
              const A xv = convert<A>(p[i]);
              q[i] = convert<T>((through(convert<A>(g[i]), xv) - ac - (xv - mu) * bc) * kc);
            }
          }
        }
      });
    });
  });
}

void bn_count(OnCpu, const Tensor& counter) {
  int64_t* n = counter.data<int64_t>();
  for (int64_t i = 0; i < counter.numel(); ++i) ++n[i];
}

void bn_stats(OnCpu, const Tensor& x, const Tensor& mean, const Tensor& m2) {
  bn_stats_cpu(x, mean.data<double>(), m2.data<double>());
}

void bn_elemt(OnCpu, const Tensor& x, const Tensor& y, const Tensor& mean, const Tensor& scale,
              const Tensor& shift) {
  bn_elemt_cpu(x, y, mean.data<double>(), scale.data<double>(), shift.data<double>());
}

void bn_backward_reduce(OnCpu, const Tensor& gy, const Tensor& x, const Tensor& mean,
                        const Tensor& sum_dy, const Tensor& sum_dy_xmu) {
  bn_backward_reduce_cpu(gy, x, mean.data<double>(), sum_dy.data<double>(),
                         sum_dy_xmu.data<double>());
}

void bn_backward_elemt(OnCpu, const Tensor& gy, const Tensor& x, const Tensor& gx,
                       const Tensor& mean, const Tensor& k, const Tensor& a, const Tensor& b) {
  bn_backward_elemt_cpu(gy, x, gx, mean.data<double>(), k.data<double>(), a.data<double>(),
                        b.data<double>());
}

}  // namespace rg::detail
