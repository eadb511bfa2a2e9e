#pragma once
// Host/device math of leaky_relu, shared by the CPU loop and the CUDA kernel.

#include "core/macros.h"

namespace rg {

struct LeakyReluFn {
  double negative_slope;
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    return x > C(0) ? x : x * static_cast<C>(negative_slope);
  }
};

struct LeakyReluGradFn {  // (gy, x) -> gx
  double negative_slope;
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C x) const {
    return x > C(0) ? gy : gy * static_cast<C>(negative_slope);
  }
};

}  // namespace rg
