#pragma once
// Host/device math of gelu, shared by the CPU loop and the CUDA kernel. std::erf and std::exp
// are the C library's on the host and CUDA's on the device (both correctly rounded to within
// a few ulps; the GPU parity test allows for that).

#include <cmath>

#include "core/macros.h"

namespace rg {

struct GeluFn {  // ½·x·(1 + erf(x/√2))
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));
  }
};

struct GeluGradFn {  // (gy, x) -> gx = gy·(Φ(x) + x·φ(x))
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C x) const {
    const C cdf = C(0.5) * (C(1) + std::erf(x * C(0.70710678118654752440)));
    const C pdf = C(0.39894228040143267794) * std::exp(C(-0.5) * x * x);
    return gy * (cdf + x * pdf);
  }
};

}  // namespace rg
