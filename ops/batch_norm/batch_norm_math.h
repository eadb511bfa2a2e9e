#pragma once
// The per-channel arithmetic of batch_norm, in f64, shared by the CPU code (batch_norm.cpp) and
// the GPU's per-channel kernels (batch_norm_kernels.cuh), so both devices compute the same
// coefficients the same way.

#include <cmath>

#include "core/macros.h"
#include "ops/gelu/gelu_functors.h"

namespace rg::detail {

// batch_norm alone, or with its activation fused into the element passes: batch_norm_relu,
// batch_norm_gelu (one code path, on either device).
enum class BnActivation { none, relu, gelu };

}  // namespace rg::detail

namespace rg::bn_math {

// 1/σ from the biased variance.
RG_HOST_DEVICE inline double invstd(double var, double eps) {
  return 1.0 / std::sqrt(var + eps);
}

// running ← (1 − momentum)·running + momentum·value.
RG_HOST_DEVICE inline double running_update(double running, double value, double momentum) {
  return (1 - momentum) * running + momentum * value;
}

// The running variance's new value: the unbiased variance m2/(count − 1), as PyTorch.
RG_HOST_DEVICE inline double running_var_update(double running, double m2, double unbiased,
                                                double momentum) {
  return (1 - momentum) * running + momentum * m2 * unbiased;
}

// The backward's coefficients, gx = (gy − a − (x − mean)·b)·k:
//   k = w·invstd, a = Σgy/M, b = invstd·Σ(gy·x̂)/M (per unit of x − mean); a = b = 0 in eval.
struct GradCoefs {
  double k, a, b;
};
RG_HOST_DEVICE inline GradCoefs grad_coefs(double w, double invstd, double sum_dy,
                                           double sum_dy_xhat, double inv_m, bool train) {
  return {w * invstd, train ? sum_dy * inv_m : 0.0, train ? invstd * sum_dy_xhat * inv_m : 0.0};
}

// The fused ops' normalised value before the activation, (x − mean)·scale + shift, with one
// explicit rounding (fma): the backward recomputes it to find where the relu passed the
// gradient (or where to take gelu's derivative), and must get the forward's value exactly,
// whatever the compiler contracts.
template <class A>
RG_HOST_DEVICE inline A affine(A x, A mean, A scale, A shift) {
  return std::fma(x - mean, scale, shift);
}

// The fused activation of v (the affine value, in the element pass's arithmetic type A) and gy
// through its derivative at v. gelu runs in G, the type its unfused op computes in for the data's
// dtype (f32 for f32 and the 16-bit types, f64 for f64): v rounded to G is the unfused op's input
// (batch_norm's output), so gelu and its gradient are computed as gelu(batch_norm(x)) computes
// them. relu is a compare, exact in any type: the mask is taken on v itself.
template <class G, class A>
RG_HOST_DEVICE inline A activate(detail::BnActivation act, A v) {
  if (act == detail::BnActivation::relu) return v > A(0) ? v : A(0);
  if (act == detail::BnActivation::gelu) return static_cast<A>(GeluFn{}(static_cast<G>(v)));
  return v;
}
template <class G, class A>
RG_HOST_DEVICE inline A activation_grad(detail::BnActivation act, A gy, A v) {
  if (act == detail::BnActivation::relu) return v > A(0) ? gy : A(0);
  if (act == detail::BnActivation::gelu)
    return static_cast<A>(GeluGradFn{}(static_cast<G>(gy), static_cast<G>(v)));
  return gy;
}

}  // namespace rg::bn_math
