#pragma once
// Host/device math of sqrt, shared by the CPU loop and the CUDA kernel.

#include <cmath>

#include "core/macros.h"

namespace rg {

struct SqrtFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    return std::sqrt(x);
  }
};

// d√x/dx = 1 / (2√x) = 1 / (2y): from the output, no second square root. At x = 0 this is
// gy / 0 = ±inf (nan when gy = 0), as in PyTorch.
struct SqrtGradFn {  // (gy, y) -> gx
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C y) const {
    return gy / (C(2) * y);
  }
};

}  // namespace rg
