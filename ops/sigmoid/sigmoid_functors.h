#pragma once
// Host/device math of sigmoid, shared by the CPU loop and the CUDA kernel.

#include <cmath>

#include "core/macros.h"

namespace rg {

// σ(x) = 1 / (1 + e⁻ˣ) for x >= 0 and eˣ / (1 + eˣ) for x < 0: the exponential is then
// always of a non-positive number, so it never overflows, and for very negative x the result
// keeps its relative precision (1 / (1 + e⁻ˣ) would round 1 + e⁻ˣ to inf and return 0 early).
struct SigmoidFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
    const C e = std::exp(x);
    return e / (C(1) + e);
  }
};

struct SigmoidGradFn {  // (gy, y) -> gx = gy · (1 − y) · y, PyTorch's order of operations
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C y) const {
    return gy * (C(1) - y) * y;
  }
};

}  // namespace rg
