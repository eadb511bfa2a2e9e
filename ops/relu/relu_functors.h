#pragma once
// Host/device math of relu, shared by the CPU loop and the CUDA kernel.

#include "core/macros.h"

namespace rg {

struct ReluFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    return x > C(0) ? x : C(0);
  }
};

struct ReluGradFn {  // (gy, y) -> gx
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C y) const {
    return y > C(0) ? gy : C(0);
  }
};

}  // namespace rg
