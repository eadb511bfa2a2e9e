#pragma once
// Host/device math of add, shared by the CPU loop and the CUDA kernel.

#include "core/macros.h"

namespace rg {

struct AddFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C a, C b) const {
    return a + b;
  }
};

struct AddScalarFn {  // a + s
  double s;
  template <class C>
  RG_HOST_DEVICE C operator()(C a) const {
    return a + static_cast<C>(s);
  }
};

}  // namespace rg
