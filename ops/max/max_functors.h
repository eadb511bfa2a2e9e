#pragma once
// Host/device math of max, shared by the CPU loops and the CUDA kernels.

#include "core/macros.h"

namespace rg {

// True when v should replace the running maximum `best`: strictly larger (so ties keep the
// first occurrence), or the first NaN. (v != v is the NaN test that compiles everywhere.)
template <class C>
RG_HOST_DEVICE inline bool max_beats(C v, C best) {
  return v > best || (v != v && best == best);
}

struct MaxAllGradFn {  // (gy, x, max) -> gx: gy shared among the `count` maxima
  double inv_count;
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C x, C m) const {
    return x == m ? gy * static_cast<C>(inv_count) : C(0);
  }
};

}  // namespace rg
