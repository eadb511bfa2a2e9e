#pragma once
// Host/device math of tanh, shared by the CPU loop and the CUDA kernel.

#include <cmath>

#include "core/macros.h"

namespace rg {

struct TanhFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    return std::tanh(x);
  }
};

struct TanhGradFn {  // (gy, y) -> gx = gy · (1 − y²)
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C y) const {
    return gy * (C(1) - y * y);
  }
};

}  // namespace rg
