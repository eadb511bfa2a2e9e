#pragma once
// Host/device math of log, shared by the CPU loop and the CUDA kernel.

#include <cmath>

#include "core/macros.h"

namespace rg {

struct LogFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    return std::log(x);
  }
};

}  // namespace rg
