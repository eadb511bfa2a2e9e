#pragma once
// The per-channel arithmetic of batch_norm, in f64, shared by the CPU code (batch_norm.cpp) and
// the GPU's per-channel kernels (batch_norm_kernels.cuh), so both devices compute the same
// coefficients the same way.

#include <cmath>

#include "core/macros.h"

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

// batch_norm_relu's normalised value before the relu, (x − mean)·scale + shift, with one
// explicit rounding (fma): the backward recomputes it to find where the relu passed the
// gradient, and must get the forward's value exactly, whatever the compiler contracts.
template <class A>
RG_HOST_DEVICE inline A affine(A x, A mean, A scale, A shift) {
  return std::fma(x - mean, scale, shift);
}

}  // namespace rg::bn_math
