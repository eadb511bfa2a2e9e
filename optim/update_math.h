#pragma once
// The per-element math of the training step, written once: the CPU loops (update_cpu.cpp) and
// the fused CUDA kernels (optim_kernels.cuh) call these very functions, so the two agree bit for
// bit in f32 (no FMA contraction on either side: -ffp-contract=off for g++, --fmad=false for
// nvcc, see optim/CMakeLists.txt).
//
// Hyperparameters arrive as doubles (the options) and are rounded once to the compute type C
// (float for f32 and the 16-bit types, double for f64), as PyTorch rounds a float tensor's alpha.

#include <cmath>
#include <cstdint>

#include "core/macros.h"

namespace rg::detail {

// ---- SGD: momentum, dampening, weight decay, Nesterov (PyTorch's rule) -------------------------

// One parameter's SGD hyperparameters for one step.
struct SgdScalars {
  double lr = 0, weight_decay = 0, momentum = 0, dampening = 0;
  bool nesterov = false;
  bool has_buffer = false;  // momentum != 0: a momentum buffer is read and written
  bool first = false;       // the buffer's first step: it starts at the gradient itself
  // The rate as a scalar in the update's memory (Optimizer::keep_lr_on_device), read in place
  // of lr: a step captured in a CUDA graph reads each replay's rate there.
  const double* lr_at = nullptr;
};

template <class C>
struct SgdCoeffs {
  C lr, wd, mom, keep;
  bool decay, nesterov, has_buffer, first;
};

template <class C>
RG_HOST_DEVICE inline SgdCoeffs<C> sgd_coeffs(const SgdScalars& s) {
  return {static_cast<C>(s.lr_at ? *s.lr_at : s.lr),
          static_cast<C>(s.weight_decay),
          static_cast<C>(s.momentum),
          static_cast<C>(1 - s.dampening),
          s.weight_decay != 0,
          s.nesterov,
          s.has_buffer,
          s.first};
}

// Updates element k of p (and of the momentum buffer b, when there is one) from gradient g.
template <class T, class C>
RG_HOST_DEVICE inline void sgd_element(T* p, const T* g, T* b, int64_t k, const SgdCoeffs<C>& c) {
  const C pk = static_cast<C>(p[k]);
  C d = static_cast<C>(g[k]);
  if (c.decay) d = d + c.wd * pk;
  if (c.has_buffer) {
    C m = d;  // PyTorch's first step: buffer = gradient, no dampening
    if (!c.first) {
      m = static_cast<C>(b[k]) * c.mom;
      m = m + c.keep * d;
    }
    b[k] = static_cast<T>(m);
    d = c.nesterov ? d + c.mom * m : m;
  }
  p[k] = static_cast<T>(pk - c.lr * d);
}

// ---- AdamW: decoupled weight decay, bias correction, optional AMSGrad (PyTorch's rule) --------

// One parameter's AdamW hyperparameters for one step; the bias corrections depend on the
// parameter's own step count, computed in double on the host as PyTorch does in Python floats.
struct AdamWScalars {
  double lr = 0, weight_decay = 0, beta1 = 0, beta2 = 0, eps = 0;
  double step_size = 0;   // lr / (1 − β1ᵗ)
  double bias2_sqrt = 0;  // √(1 − β2ᵗ)
  bool amsgrad = false;
};

template <class C>
struct AdamWCoeffs {
  C decay, w1, b2, w2, eps, c2, neg_step;
  bool decays, amsgrad;
};

template <class C>
RG_HOST_DEVICE inline AdamWCoeffs<C> adamw_coeffs(const AdamWScalars& s) {
  return {static_cast<C>(1 - s.lr * s.weight_decay),
          static_cast<C>(1 - s.beta1),
          static_cast<C>(s.beta2),
          static_cast<C>(1 - s.beta2),
          static_cast<C>(s.eps),
          static_cast<C>(s.bias2_sqrt),
          static_cast<C>(-s.step_size),
          s.weight_decay != 0,
          s.amsgrad};
}

// Updates element k of p, the moments m and v, and (AMSGrad) their running maximum x.
template <class T, class C>
RG_HOST_DEVICE inline void adamw_element(T* p, const T* g, T* m, T* v, T* x, int64_t k,
                                         const AdamWCoeffs<C>& c) {
  C pk = static_cast<C>(p[k]);
  const C gk = static_cast<C>(g[k]);
  if (c.decays) pk = pk * c.decay;
  // torch.lerp's formula for weights below 0.5 (always, for β1 > 0.5); for larger weights it
  // interpolates from the other end.
  C mk = static_cast<C>(m[k]);
  mk = c.w1 < C(0.5) ? mk + c.w1 * (gk - mk) : gk - (gk - mk) * (C(1) - c.w1);
  C vk = static_cast<C>(v[k]) * c.b2;
  vk = vk + c.w2 * gk * gk;
  m[k] = static_cast<T>(mk);
  v[k] = static_cast<T>(vk);
  C denom_v = vk;
  if (c.amsgrad) {
    // torch.maximum: NaN wins.
    const C xk = static_cast<C>(x[k]);
    denom_v = (vk != vk || vk > xk) ? vk : xk;
    x[k] = static_cast<T>(denom_v);
  }
  const C denom = std::sqrt(denom_v) / c.c2 + c.eps;
  p[k] = static_cast<T>(pk + c.neg_step * mk / denom);
}

// ---- Lookahead (airbench94's): a running average of the weights, the weights reset to it ------

// a ← a + w·(t − a) (w = 1 − decay rounded to C: torch.lerp_'s form, and the rounding of ops'
// sub, scalar mul and add, one after another), then t ← a.
template <class T, class C>
RG_HOST_DEVICE inline void lookahead_element(T* t, T* a, int64_t k, C w) {
  const C ak = static_cast<C>(a[k]);
  const C d = static_cast<C>(t[k]) - ak;
  const T average = static_cast<T>(ak + d * w);
  a[k] = average;
  t[k] = average;
}

// ---- the loss scaler and gradient clipping ----------------------------------------------------

// g[k] ← g[k] · inv (inv = 1/S rounded to C); returns whether g[k] was inf or NaN before.
template <class T, class C>
RG_HOST_DEVICE inline bool unscale_element(T* g, int64_t k, C inv) {
  const C v = static_cast<C>(g[k]);
  g[k] = static_cast<T>(v * inv);
  return !(v - v == C(0));  // inf − inf and NaN − NaN are NaN: one test for both
}

// g[k] ← g[k] · coef (coef = max_norm / (norm + 1e-6) rounded to C).
template <class T, class C>
RG_HOST_DEVICE inline void scale_element(T* g, int64_t k, C coef) {
  g[k] = static_cast<T>(static_cast<C>(g[k]) * coef);
}

// |a|ᵖ for the norm's sum (p finite), in double.
RG_HOST_DEVICE inline double norm_term(double a, double p) {
  return p == 2 ? a * a : p == 1 ? a : std::pow(a, p);
}

// The ∞-norm's combine: the larger, NaN once either is NaN (a > NaN is false, so test both).
RG_HOST_DEVICE inline double norm_max(double acc, double a) {
  return (a != a || a > acc) ? a : acc;
}

// The norm from Σ |g|ᵖ (or max |g| for p = ∞).
RG_HOST_DEVICE inline double norm_finish(double acc, double p) {
  return p == INFINITY ? acc : p == 1 ? acc : p == 2 ? std::sqrt(acc) : std::pow(acc, 1 / p);
}

}  // namespace rg::detail
