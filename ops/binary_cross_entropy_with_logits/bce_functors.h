#pragma once
// Host/device math of binary_cross_entropy_with_logits, shared by the CPU loop and the CUDA
// kernel. Operands come as (weight, pos_weight, [g,] x, y); absent ones are passed as 1.

#include <cmath>

#include "core/macros.h"

namespace rg {
namespace bce_math {

// log σ(x) without overflow: exp only ever sees −|x| ≤ 0.
template <class C>
RG_HOST_DEVICE inline C log_sigmoid(C x) {
  return (x < C(0) ? x : C(0)) - std::log1p(std::exp(-std::fabs(x)));
}

// σ(−x) = 1 − σ(x), from exp(−|x|) so it neither overflows nor loses 1 − σ(x) to rounding.
template <class C>
RG_HOST_DEVICE inline C sigmoid_neg(C x) {
  const C e = std::exp(-std::fabs(x));
  return x >= C(0) ? e / (C(1) + e) : C(1) / (C(1) + e);
}

}  // namespace bce_math

struct BceWithLogitsFn {  // (w, pw, x, y) -> loss
  template <class C>
  RG_HOST_DEVICE C operator()(C w, C pw, C x, C y) const {
    const C lw = C(1) + (pw - C(1)) * y;
    return w * ((C(1) - y) * x - lw * bce_math::log_sigmoid(x));
  }
};

struct BceWithLogitsGradInputFn {  // (w, pw, g, x, y) -> gx
  double scale;
  template <class C>
  RG_HOST_DEVICE C operator()(C w, C pw, C g, C x, C y) const {
    const C lw = C(1) + (pw - C(1)) * y;
    return g * static_cast<C>(scale) * w * ((C(1) - y) - lw * bce_math::sigmoid_neg(x));
  }
};

struct BceWithLogitsGradTargetFn {  // (w, pw, g, x, y) -> gy
  double scale;
  template <class C>
  RG_HOST_DEVICE C operator()(C w, C pw, C g, C x, C /*y*/) const {
    return g * static_cast<C>(scale) * w * (-x - (pw - C(1)) * bce_math::log_sigmoid(x));
  }
};

// The same math without a weight tensor, a pos_weight tensor, or either: the absent operand is
// 1, so the unweighted case reads only its own operands.
template <class F>
struct UnitPosWeight {  // (w, ...) -> f(w, 1, ...)
  F f;
  template <class C, class... A>
  RG_HOST_DEVICE C operator()(C w, A... a) const {
    return f(w, C(1), a...);
  }
};
template <class F>
struct UnitWeight {  // (pw, ...) -> f(1, pw, ...)
  F f;
  template <class C, class... A>
  RG_HOST_DEVICE C operator()(C pw, A... a) const {
    return f(C(1), pw, a...);
  }
};
template <class F>
struct UnitWeights {  // (...) -> f(1, 1, ...)
  F f;
  template <class C, class... A>
  RG_HOST_DEVICE C operator()(C a0, A... a) const {
    return f(C(1), C(1), a0, a...);
  }
};

}  // namespace rg
