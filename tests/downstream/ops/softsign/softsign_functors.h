#pragma once
// Host/device math of softsign, shared by ringgrad's CPU loop and its CUDA kernel.

#include <cmath>

#include "core/macros.h"

namespace my {

struct SoftsignFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    return x / (C(1) + std::abs(x));
  }
};

struct SoftsignGradFn {  // (gy, x) -> gx = gy / (1 + |x|)²
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C x) const {
    const C d = C(1) + std::abs(x);
    return gy / (d * d);
  }
};

}  // namespace my
