// CPU kernel of the fused cross_entropy, forward and backward (formulas in cross_entropy.h).
//
// Lanes (N, C, inner) around the class dim. The classifier case (inner == 1) runs row by
// row with the vectorised helpers of row_math.h; (N, C, H, W) inputs walk a segment of
// neighbouring pixels side by side so every pass over the classes reads contiguous rows.
// The forward computes logsumexp = m + log Σ exp(x − m) per lane (sum in double) and keeps it;
// the backward rebuilds p = exp(x − logsumexp) from it, so no (N, C) probability tensor exists
// at any point. Loss sums are taken in double and combined in a fixed order (parallel_sum).
#include <algorithm>
#include <array>
#include <cmath>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/cross_entropy/cross_entropy_kernel.h"
#include "ops/reduction/row_math.h"

namespace rg::detail {
namespace {
using namespace rg::row_math;

// Class weights as a vector (all ones without weight) and their sum.
struct ClassWeights {
  std::vector<double> w;
  double total = 0;
  ClassWeights(const Tensor& weight, int64_t classes)
      : w(weight.defined() ? weight.to_vector<double>()
                           : std::vector<double>(static_cast<std::size_t>(classes), 1.0)) {
    for (double v : w) total += v;
  }
};

// What the forward needs besides the logits, per call.
struct ForwardCtx {
  const int64_t* target;
  const ClassWeights* cw;
  const CrossEntropyArgs* args;
  double* lse;
  double eps_c;  // ε / C
};

// The loss of lane n from its logsumexp and Σ_c w[c]·x[c] (used only when ε > 0), given the
// logit of its target class. Returns {loss, w[t]}, both 0 on an ignored lane.
inline std::array<double, 2> lane_loss(const ForwardCtx& f, int64_t n, double lse, double wx,
                                       double x_t) {
  const int64_t t = f.target[n];
  f.lse[n] = lse;
  if (t == f.args->ignore_index) return {0.0, 0.0};
  const double eps = f.args->label_smoothing, w_t = f.cw->w[t];
  double loss = -w_t * (x_t - lse);
  if (eps > 0) loss = (1 - eps) * loss + f.eps_c * (lse * f.cw->total - wx);
  return {loss, w_t};
}

template <class T>
std::array<double, 2> forward_rows(const T* px, T* po, const Lanes& l, int64_t b, int64_t e,
                                   const ForwardCtx& f) {
  using C = compute_t<T>;
  const int64_t n = l.size;
  std::vector<C> xbuf = staging<T>(n), tmp(n);
  std::array<double, 2> acc{};  // Σ loss, Σ w[t]
  const bool smooth = f.args->label_smoothing > 0;
  for (int64_t row = b; row < e; ++row) {
    const C* x = load(px + row * n, n, xbuf);
    const C m = max_of(x, n);
    exp_shifted(x, m, tmp.data(), n);
    const double lse = static_cast<double>(m) + std::log(sum_as_double(tmp.data(), n));
    const int64_t t = f.target[row];
    const double x_t = t == f.args->ignore_index ? 0.0 : static_cast<double>(x[t]);
    const auto [loss, w_t] =
        lane_loss(f, row, lse, smooth ? dot_as_double(x, f.cw->w.data(), n) : 0.0, x_t);
    acc[0] += loss;
    acc[1] += w_t;
    if (po) po[row] = T(static_cast<C>(loss));
  }
  return acc;
}

template <class T>
std::array<double, 2> forward_segments(const T* px, T* po, const Lanes& l, int64_t b, int64_t e,
                                       const ForwardCtx& f) {
  using C = compute_t<T>;
  const int64_t seg = std::min(l.inner, e - b);
  std::vector<C> m(seg), tmp(seg), xbuf = staging<T>(seg);
  std::vector<double> s(seg), wx(seg);
  std::array<double, 2> acc{};
  const bool smooth = f.args->label_smoothing > 0;
  for_segments(b, e, l.inner, [&](int64_t a, int64_t i0, int64_t i1) {
    const int64_t len = i1 - i0;
    const T* xa = px + a * l.size * l.inner + i0;
    auto row = [&](int64_t c) { return load(xa + c * l.inner, len, xbuf); };
    std::copy_n(row(0), len, m.begin());
    for (int64_t c = 1; c < l.size; ++c) max_into(m.data(), row(c), len);
    std::fill_n(s.begin(), len, 0.0);
    std::fill_n(wx.begin(), len, 0.0);
    for (int64_t c = 0; c < l.size; ++c) {
      const C* x = row(c);
      exp_shifted(x, m.data(), tmp.data(), len);
      for (int64_t i = 0; i < len; ++i) s[i] += tmp[i];
      if (smooth)
        for (int64_t i = 0; i < len; ++i) wx[i] += f.cw->w[c] * static_cast<double>(x[i]);
    }
    for (int64_t i = 0; i < len; ++i) {
      const int64_t n = a * l.inner + i0 + i, t = f.target[n];
      const double lse = static_cast<double>(m[i]) + std::log(s[i]);
      const double x_t = t == f.args->ignore_index
                             ? 0.0
                             : static_cast<double>(static_cast<C>(xa[t * l.inner + i]));
      const auto [loss, w_t] = lane_loss(f, n, lse, wx[i], x_t);
      acc[0] += loss;
      acc[1] += w_t;
      if (po) po[n] = T(static_cast<C>(loss));
    }
  });
  return acc;
}

// What the backward needs: per lane, gx_c = p_c·k_p − [c == t]·k_t − k_w·w[c] with
// k_t = g_n·(1 − ε)·w[t], k_w = g_n·ε/C, k_p = k_t + k_w·Σw (all 0 on ignored lanes).
struct BackwardCtx {
  const int64_t* target;
  const double* lse;
  const ClassWeights* cw;
  const CrossEntropyArgs* args;
  double eps_c;
  double g_all;          // g_n for the reductions (mean: gy / Σ w[t])
  const double* g_each;  // g_n per lane for Reduction::none (widened to double)
};

struct LaneCoefs {
  double kp, kt, kw;
};

inline LaneCoefs lane_coefs(const BackwardCtx& k, int64_t n) {
  const int64_t t = k.target[n];
  if (t == k.args->ignore_index) return {0, 0, 0};
  const double g = k.g_each ? k.g_each[n] : k.g_all;
  const double kt = g * (1 - k.args->label_smoothing) * k.cw->w[t], kw = g * k.eps_c;
  return {kt + kw * k.cw->total, kt, kw};
}

template <class T>
void backward_rows(const T* px, T* pgx, const Lanes& l, int64_t b, int64_t e, const BackwardCtx& k,
                   const std::vector<compute_t<T>>& wc) {
  using C = compute_t<T>;
  const int64_t n = l.size;
  std::vector<C> xbuf = staging<T>(n), gbuf = staging<T>(n);
  for (int64_t row = b; row < e; ++row) {
    const C* x = load(px + row * n, n, xbuf);
    C* gx = out_buffer(pgx + row * n, gbuf);
    const LaneCoefs c = lane_coefs(k, row);
    exp_shifted(x, static_cast<C>(k.lse[row]), gx, n);  // p
    // A plain loop, not an Eigen map: one formula for every element, wherever gx lies (Eigen
    // splits an unaligned map into scalar and packet parts; see exp_shifted_blocks).
    const C kp = static_cast<C>(c.kp), kw = static_cast<C>(c.kw);
    for (int64_t i = 0; i < n; ++i) gx[i] = gx[i] * kp - kw * wc[static_cast<std::size_t>(i)];
    if (c.kt != 0) gx[k.target[row]] -= static_cast<C>(c.kt);
    store(gx, pgx + row * n, n);
  }
}

template <class T>
void backward_segments(const T* px, T* pgx, const Lanes& l, int64_t b, int64_t e,
                       const BackwardCtx& k) {
  using C = compute_t<T>;
  const int64_t seg = std::min(l.inner, e - b);
  std::vector<C> lse(seg), xbuf = staging<T>(seg), gbuf = staging<T>(seg);
  std::vector<LaneCoefs> coefs(seg);
  std::vector<int64_t> ts(seg);
  for_segments(b, e, l.inner, [&](int64_t a, int64_t i0, int64_t i1) {
    const int64_t len = i1 - i0, base = a * l.size * l.inner + i0;
    for (int64_t i = 0; i < len; ++i) {
      const int64_t n = a * l.inner + i0 + i;
      coefs[i] = lane_coefs(k, n);
      ts[i] = k.target[n];
      lse[i] = static_cast<C>(k.lse[n]);
    }
    for (int64_t c = 0; c < l.size; ++c) {
      const C* x = load(px + base + c * l.inner, len, xbuf);
      C* gx = out_buffer(pgx + base + c * l.inner, gbuf);
      exp_shifted(x, lse.data(), gx, len);  // p
      const double wc = k.cw->w[c];
      for (int64_t i = 0; i < len; ++i) {
        double g = gx[i] * coefs[i].kp - coefs[i].kw * wc;
        if (ts[i] == c) g -= coefs[i].kt;
        gx[i] = static_cast<C>(g);
      }
      store(gx, pgx + base + c * l.inner, len);
    }
  });
}

}  // namespace

CrossEntropyForward cross_entropy_forward(OnCpu, const Tensor& x_in, const Tensor& target_in,
                                          const Tensor& weight, const CrossEntropyArgs& args) {
  const Lanes l = args.lanes;
  check_target_range("cross_entropy", target_in, l.size, args.ignore_index);
  const Tensor x = x_in.contiguous(), target = target_in.contiguous();
  const ClassWeights cw(weight, l.size);
  const bool per_element = args.reduction == Reduction::none;
  Tensor out = empty(per_element ? target.shape() : Shape{}, {x.dtype(), x.device()});
  Tensor lse = empty(target.shape(), {DType::f64, x.device()});
  double total_weight = 0;
  const ForwardCtx f{target.data<int64_t>(), &cw, &args, lse.data<double>(),
                     args.label_smoothing / static_cast<double>(l.size)};
  dispatch_floating(x.dtype(), "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = static_cast<const T*>(x.data_ptr());
    T* po = static_cast<T*>(out.data_ptr());
    T* per_lane = per_element ? po : nullptr;
    const auto [loss_sum, weight_sum] =
        parallel_sum<2>(l.count(), lane_grain(l), [&](int64_t b, int64_t e) {
          return l.inner == 1 ? forward_rows(px, per_lane, l, b, e, f)
                              : forward_segments(px, per_lane, l, b, e, f);
        });
    total_weight = weight_sum;
    if (args.reduction == Reduction::sum) po[0] = T(static_cast<C>(loss_sum));
    if (args.reduction == Reduction::mean) po[0] = T(static_cast<C>(loss_sum / weight_sum));
  });
  return {{out, scalar_tensor(total_weight, {DType::f64})}, lse};
}

Tensor cross_entropy_backward(OnCpu, const Tensor& gy_in, const Tensor& x_in,
                              const Tensor& target_in, const Tensor& weight, const Tensor& lse,
                              const CrossEntropyArgs& args, const Tensor& total_weight) {
  const Tensor x = x_in.contiguous(), target = target_in.contiguous();
  const Lanes l = args.lanes;
  const ClassWeights cw(weight, l.size);
  const bool per_element = args.reduction == Reduction::none;
  const std::vector<double> g = gy_in.to_vector<double>();  // N·d values, or one
  const double scale = args.reduction == Reduction::mean ? 1.0 / total_weight.item() : 1.0;
  const BackwardCtx k{target.data<int64_t>(),
                      lse.data<double>(),
                      &cw,
                      &args,
                      args.label_smoothing / static_cast<double>(l.size),
                      per_element ? 0.0 : g[0] * scale,
                      per_element ? g.data() : nullptr};
  Tensor gx = empty(x.shape(), {x.dtype(), x.device()});
  dispatch_floating(x.dtype(), "cross_entropy_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = static_cast<const T*>(x.data_ptr());
    T* pgx = static_cast<T*>(gx.data_ptr());
    const std::vector<C> wc(cw.w.begin(), cw.w.end());
    parallel_for(l.count(), lane_grain(l), [&](int64_t b, int64_t e) {
      if (l.inner == 1)
        backward_rows(px, pgx, l, b, e, k, wc);
      else
        backward_segments(px, pgx, l, b, e, k);
    });
  });
  return gx;
}

}  // namespace rg::detail
