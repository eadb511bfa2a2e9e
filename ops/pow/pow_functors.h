#pragma once
// Host/device math of pow, shared by the CPU loop and the CUDA kernel.

#include <cmath>

#include "core/macros.h"

namespace rg {

// xᵉ for a scalar exponent. The common exponents skip std::pow — a multiply or a square root
// is an order of magnitude cheaper and correctly rounded — as PyTorch's CPU kernel does, so
// the results also agree bit for bit with it (e.g. pow(-0., .5) = -0. like sqrt).
struct PowScalarFn {
  double e;
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    if (e == 2) return x * x;
    if (e == 1) return x;
    if (e == 0.5) return std::sqrt(x);
    if (e == -1) return C(1) / x;
    return std::pow(x, static_cast<C>(e));
  }
};

// d(xᵉ)/dx = e·xᵉ⁻¹, and exactly 0 for e = 0: x⁻¹ at x = 0 is inf and 0·inf would be nan.
struct PowScalarGradFn {  // (gy, x) -> gx
  double e;
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C x) const {
    if (e == 0) return C(0);
    return gy * (static_cast<C>(e) * PowScalarFn{e - 1}(x));
  }
};

struct PowFn {  // (x, e) -> xᵉ
  template <class C>
  RG_HOST_DEVICE C operator()(C x, C e) const {
    return std::pow(x, e);
  }
};

struct PowGradBaseFn {  // (gy, x, e) -> gx = gy · e·xᵉ⁻¹, 0 where e = 0 (see PowScalarGradFn)
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C x, C e) const {
    if (e == C(0)) return C(0);
    return gy * (e * std::pow(x, e - C(1)));
  }
};

// d(xᵉ)/de = xᵉ·ln x = y·ln x. Defined for x > 0; x < 0 gives nan (ln of a negative). At
// x = 0 PyTorch takes 0 when e >= 0 (0ᵉ is flat in e there) and keeps y·ln 0 = inf·-inf = -inf
// for e < 0. At x = 0, e >= 0 is exactly y ∈ {0, 1} (0ᵉ is 0 for e > 0, 1 for e = 0, inf for
// e < 0, nan for nan), so the output stands in for e and e need not be saved.
struct PowGradExponentFn {  // (gy, x, y) -> ge
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C x, C y) const {
    if (x == C(0) && (y == C(0) || y == C(1))) return C(0);
    return gy * (y * std::log(x));
  }
};

struct RpowScalarFn {  // e -> baseᵉ
  double base;
  template <class C>
  RG_HOST_DEVICE C operator()(C e) const {
    return std::pow(static_cast<C>(base), e);
  }
};

struct RpowGradFn {  // (gy, y) -> ge = gy · y·ln(base), with PowGradExponentFn's rule at base 0
  double base;
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C y) const {
    return PowGradExponentFn{}(gy, static_cast<C>(base), y);
  }
};

}  // namespace rg
