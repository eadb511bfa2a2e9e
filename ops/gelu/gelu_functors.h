#pragma once
// Host/device math of gelu, shared by the CPU loop and the CUDA kernel. erf and exp are
// pointwise_erf / pointwise_exp (ops/elementwise/f32_math.h): for f32 on the host (and so f16 and
// bf16, which compute in f32) select-based versions that let GCC vectorise these loops, within an
// ulp of the correctly rounded result; the C library's for f64; CUDA's on the device (both also
// within a few ulps; the GPU parity test allows for that).

#include "core/macros.h"
#include "ops/elementwise/f32_math.h"

namespace rg {

struct GeluFn {  // ½·x·(1 + erf(x/√2))
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    return C(0.5) * x * (C(1) + pointwise_erf(x * C(0.70710678118654752440)));
  }
};

struct GeluGradFn {  // (gy, x) -> gx = gy·(Φ(x) + x·φ(x))
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C x) const {
    const C cdf = C(0.5) * (C(1) + pointwise_erf(x * C(0.70710678118654752440)));
    const C pdf = C(0.39894228040143267794) * pointwise_exp(C(-0.5) * x * x);
    return gy * (cdf + x * pdf);
  }
};

}  // namespace rg
