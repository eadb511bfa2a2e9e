#pragma once
// Host/device math of exp, shared by the CPU loop and the CUDA kernel.

#include <cmath>

#include "core/macros.h"

namespace rg {

struct ExpFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    return std::exp(x);
  }
};

}  // namespace rg
