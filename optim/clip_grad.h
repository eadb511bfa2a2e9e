#pragma once
// Gradient clipping by total norm (PyTorch's torch.nn.utils.clip_grad_norm_). Over the
// gradients of all parameters taken together as one vector G:
//
//   total = ‖G‖_p = (Σ |gᵢ|ᵖ)^(1/p)        (p = ∞: max |gᵢ|)
//   coef  = max_norm / (total + 1e-6)
//   every gradient ← gradient · coef       only when coef < 1
//
// The 1e-6 keeps coef finite for an all-zero gradient and clips to just under max_norm.
// Parameters whose .grad is undefined are left out. The sum is accumulated in double (in
// fixed-size blocks, so the result does not depend on the thread count).
//
// A non-finite total norm (an inf or NaN gradient, e.g. an fp16 overflow) is returned and the
// gradients are left unscaled: the caller (the loss scaler) decides to skip the step.
// NonFiniteNorm::error throws instead (PyTorch's error_if_nonfinite=True). Note PyTorch's
// default (error_if_nonfinite=False) does scale in that case — by NaN or by 0 — which destroys
// the gradients; ringgrad deliberately does not.
//
// Clip *unscaled* gradients: with a loss scaler, call scaler.unscale(optimizer) first.
//
// On a GPU the norm is computed and the gradients scaled there (partial sums per chunk of each
// gradient, one reduction, one scaling launch). As PyTorch's clip_grad_norm_ returns a tensor,
// clip_grad_norm_tensor returns the norm as a one-element f64 tensor on the gradients' device
// and reads nothing back; clip_grad_norm and grad_norm return a double, so they read that one
// number (a host synchronisation) — the price of their signature.

#include <limits>
#include <vector>

#include "core/tensor.h"

namespace rg {

enum class NonFiniteNorm { keep, error };

inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

// ‖G‖_p over the defined gradients of `params` (0 when none has one). norm_type: p > 0 or
// kInfNorm.
double grad_norm(const std::vector<Tensor>& params, double norm_type = 2.0);

// Clips in place as described above and returns the total norm before clipping.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                      NonFiniteNorm on_nonfinite = NonFiniteNorm::keep);

// clip_grad_norm without the host read: the norm before clipping as a 0-dim f64 tensor on the
// gradients' device (NonFiniteNorm::keep: a non-finite norm leaves the gradients unscaled).
// All defined gradients must be on one device; with none, a cpu tensor holding 0.
Tensor clip_grad_norm_tensor(const std::vector<Tensor>& params, double max_norm,
                             double norm_type = 2.0);

}  // namespace rg
