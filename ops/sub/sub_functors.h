#pragma once
// Host/device math of sub, shared by the CPU loop and the CUDA kernel.

#include "core/macros.h"

namespace rg {

struct SubFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C a, C b) const {
    return a - b;
  }
};

struct SubScalarFn {  // a - s
  double s;
  template <class C>
  RG_HOST_DEVICE C operator()(C a) const {
    return a - static_cast<C>(s);
  }
};

struct RsubScalarFn {  // s - a
  double s;
  template <class C>
  RG_HOST_DEVICE C operator()(C a) const {
    return static_cast<C>(s) - a;
  }
};

}  // namespace rg
