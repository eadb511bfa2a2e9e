#pragma once
// Host/device math of silu, shared by the CPU loop and the CUDA kernel.

#include "core/macros.h"
#include "ops/sigmoid/sigmoid_functors.h"

namespace rg {

// σ comes from SigmoidFn: its two branches never overflow e⁻ˣ, so silu(x) → 0 for very
// negative x instead of x·0 from an infinite denominator — or NaN from −∞·0.
struct SiluFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    return x * SigmoidFn{}(x);
  }
};

struct SiluGradFn {  // (gy, x) -> gx = gy·σ(x)·(1 + x·(1 − σ(x)))
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C x) const {
    const C s = SigmoidFn{}(x);
    return gy * s * (C(1) + x * (C(1) - s));
  }
};

}  // namespace rg
