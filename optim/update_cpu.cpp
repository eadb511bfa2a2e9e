// The training step's CPU loops: the per-element math of update_math.h (the CUDA kernels' own)
// over each tensor, split across threads with rg::parallel_for.
#include <atomic>
#include <cmath>

#include "core/thread_pool.h"
#include "optim/update_items.h"

namespace rg::detail {
namespace {

// Below this many elements a loop runs on one thread: it is memory-bound and a thread hand-off
// costs more than it saves.
constexpr int64_t kGrain = 1 << 14;

// Partial norms over blocks of this size, added in block order: the same result for any number
// of threads.
constexpr int64_t kNormBlock = 1 << 14;

// Σ |g|ᵖ (p finite) or max |g| (p = ∞) of one gradient, in double. NaN propagates.
double reduce(const Tensor& g, double p) {
  const bool inf = std::isinf(p);
  const int64_t n = g.numel(), blocks = (n + kNormBlock - 1) / kNormBlock;
  std::vector<double> partial(static_cast<std::size_t>(blocks), 0.0);
  dispatch_floating(g.dtype(), "clip_grad_norm", [&](auto tag) {
    using T = decltype(tag);
    const T* d = g.data<T>();
    parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        double acc = 0;
        for (int64_t k = b * kNormBlock, e = std::min(n, (b + 1) * kNormBlock); k < e; ++k) {
          const double a = std::fabs(static_cast<double>(static_cast<compute_t<T>>(d[k])));
          acc = inf ? norm_max(acc, a) : acc + norm_term(a, p);
        }
        partial[static_cast<std::size_t>(b)] = acc;
      }
    });
  });
  double total = 0;
  for (double v : partial) total = inf ? norm_max(total, v) : total + v;
  return total;
}

}  // namespace

void sgd_step(OnCpu, const std::vector<SgdItem>& items) {
  for (const SgdItem& it : items) {
    dispatch_floating(it.param.dtype(), "SGD.step", [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      T* p = it.param.data<T>();
      const T* g = it.grad.data<T>();
      T* b = it.buffer.defined() ? it.buffer.data<T>() : nullptr;
      const SgdCoeffs<C> c = sgd_coeffs<C>(it.scalars);
      parallel_for(it.param.numel(), kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) sgd_element(p, g, b, k, c);
      });
    });
  }
}

void adamw_step(OnCpu, const std::vector<AdamWItem>& items) {
  for (const AdamWItem& it : items) {
    dispatch_floating(it.param.dtype(), "AdamW.step", [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      T* p = it.param.data<T>();
      const T* g = it.grad.data<T>();
      T* m = it.exp_avg.data<T>();
      T* v = it.exp_avg_sq.data<T>();
      T* x = it.max_exp_avg_sq.defined() ? it.max_exp_avg_sq.data<T>() : nullptr;
      const AdamWCoeffs<C> c = adamw_coeffs<C>(it.scalars);
      parallel_for(it.param.numel(), kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) adamw_element(p, g, m, v, x, k, c);
      });
    });
  }
}

void lookahead_update(OnCpu, const std::vector<LookaheadItem>& items, double decay) {
  for (const LookaheadItem& it : items) {
    dispatch_floating(it.tensor.dtype(), "Lookahead.update", [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      T* t = it.tensor.data<T>();
      T* a = it.average.data<T>();
      const C w = static_cast<C>(1 - decay);
      parallel_for(it.tensor.numel(), kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) lookahead_element(t, a, k, w);
      });
    });
  }
}

int64_t unscale_grads(OnCpu, const std::vector<Tensor>& grads, const std::vector<int64_t>& indices,
                      double inv_scale) {
  int64_t first_bad = -1;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    std::atomic<bool> bad{false};
    dispatch_floating(grads[i].dtype(), "LossScaler.unscale", [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      T* g = grads[i].data<T>();
      const C inv = static_cast<C>(inv_scale);
      parallel_for(grads[i].numel(), kGrain, [&](int64_t begin, int64_t end) {
        bool local = false;
        for (int64_t k = begin; k < end; ++k) local = unscale_element(g, k, inv) || local;
        if (local) bad.store(true, std::memory_order_relaxed);
      });
    });
    if (bad.load() && (first_bad < 0 || indices[i] < first_bad)) first_bad = indices[i];
  }
  return first_bad;
}

NormAndCoef total_norm(OnCpu, const std::vector<Tensor>& grads, const Device& device, double p,
                       double max_norm) {
  double acc = 0;
  for (const Tensor& g : grads) {
    const double v = reduce(g, p);
    acc = std::isinf(p) ? norm_max(acc, v) : acc + v;
  }
  const double total = norm_finish(acc, p);
  NormAndCoef out{scalar_tensor(total, {DType::f64, device}), Tensor()};
  if (max_norm >= 0) {
    const double c = max_norm / (total + 1e-6);
    out.coef = scalar_tensor(std::isfinite(total) && c < 1 ? c : 1.0, {DType::f64, device});
  }
  return out;
}

void scale_grads(OnCpu, const std::vector<Tensor>& grads, const Tensor& coef_tensor) {
  const double coef = coef_tensor.item();
  if (!(coef < 1)) return;
  for (const Tensor& grad : grads) {
    dispatch_floating(grad.dtype(), "clip_grad_norm", [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      T* d = grad.data<T>();
      const C c = static_cast<C>(coef);
      parallel_for(grad.numel(), kNormBlock, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) scale_element(d, k, c);
      });
    });
  }
}

}  // namespace rg::detail
