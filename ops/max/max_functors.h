#pragma once
// Host/device math of max's backward, shared by the CPU loop and the CUDA kernel.

#include "core/macros.h"

namespace rg {

struct MaxAllGradFn {  // (gy, x, max) -> gx: gy shared among the `count` maxima
  double inv_count;
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C x, C m) const {
    return x == m ? gy * static_cast<C>(inv_count) : C(0);
  }
};

}  // namespace rg
