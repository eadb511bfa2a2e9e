#include "optim/clip_grad.h"

#include <cmath>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/thread_pool.h"

namespace rg {

namespace {

// Partial sums over blocks of this size, added in block order: the same result for any
// number of threads.
constexpr int64_t kBlock = 1 << 14;

std::vector<Tensor> defined_grads(const std::vector<Tensor>& params, const char* op) {
  std::vector<Tensor> grads;
  for (std::size_t i = 0; i < params.size(); ++i) {
    RG_CHECK(params[i].defined(), op, ": parameter ", i, " is undefined");
    const Tensor g = params[i].grad();
    if (!g.defined()) continue;
    RG_CHECK(g.device().is_cpu(), op, ": no CUDA kernel yet for the gradient of parameter ", i,
             " (", g.describe(), "; the CUDA backend arrives in a later release; use cpu)");
    grads.push_back(g);
  }
  return grads;
}

// Σ |g|ᵖ (p finite) or max |g| (p = ∞) of one gradient, in double. NaN propagates.
double reduce(const Tensor& grad, double p) {
  const Tensor g = grad.contiguous();
  const bool inf = std::isinf(p);
  const int64_t n = g.numel(), blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<std::size_t>(blocks), 0.0);
  dispatch_floating(g.dtype(), "clip_grad_norm", [&](auto tag) {
    using T = decltype(tag);
    const T* d = g.data<T>();
    parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        double acc = 0;
        for (int64_t k = b * kBlock, e = std::min(n, (b + 1) * kBlock); k < e; ++k) {
          const double a = std::fabs(static_cast<double>(static_cast<compute_t<T>>(d[k])));
          if (inf) {
            if (std::isnan(a) || a > acc) acc = a;  // once NaN, acc stays NaN (a > NaN is false)
          } else {
            acc += p == 2 ? a * a : p == 1 ? a : std::pow(a, p);
          }
        }
        partial[static_cast<std::size_t>(b)] = acc;
      }
    });
  });
  double total = 0;
  for (double v : partial) {
    if (!inf)
      total += v;
    else if (std::isnan(v) || v > total)
      total = v;
  }
  return total;
}

double total_norm(const std::vector<Tensor>& grads, double p) {
  const bool inf = std::isinf(p);
  double acc = 0;
  for (const Tensor& g : grads) {
    const double v = reduce(g, p);
    if (!inf)
      acc += v;
    else if (std::isnan(v) || v > acc)
      acc = v;
  }
  return inf ? acc : p == 1 ? acc : p == 2 ? std::sqrt(acc) : std::pow(acc, 1 / p);
}

void check_norm_type(double p, const char* op) {
  RG_CHECK(p > 0, op, ": norm_type must be > 0 or infinity, got ", p);
}

}  // namespace

double grad_norm(const std::vector<Tensor>& params, double norm_type) {
  check_norm_type(norm_type, "grad_norm");
  return total_norm(defined_grads(params, "grad_norm"), norm_type);
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, double norm_type,
                      NonFiniteNorm on_nonfinite) {
  check_norm_type(norm_type, "clip_grad_norm");
  RG_CHECK(max_norm >= 0, "clip_grad_norm: max_norm must be >= 0, got ", max_norm);
  const std::vector<Tensor> grads = defined_grads(params, "clip_grad_norm");
  const double total = total_norm(grads, norm_type);
  if (!std::isfinite(total)) {
    RG_CHECK(on_nonfinite == NonFiniteNorm::keep, "clip_grad_norm: the total norm of order ",
             norm_type, " of the gradients is ", total,
             " (a gradient holds inf or NaN); gradients left unchanged");
    return total;
  }
  const double coef = max_norm / (total + 1e-6);
  if (coef >= 1) return total;
  NoGradGuard no_grad;
  for (const Tensor& grad : grads) {
    // A gradient is normally contiguous; a strided one is scaled through a contiguous copy.
    const Tensor g = grad.contiguous();
    dispatch_floating(g.dtype(), "clip_grad_norm", [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      T* d = g.data<T>();
      const C c = static_cast<C>(coef);
      parallel_for(g.numel(), kBlock, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) d[k] = static_cast<T>(static_cast<C>(d[k]) * c);
      });
    });
    if (!g.same_as(grad)) copy_strided(grad, g);
  }
  return total;
}

}  // namespace rg
