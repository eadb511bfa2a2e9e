#pragma once
// Host/device math of neg, shared by the CPU loop and the CUDA kernel.

#include "core/macros.h"

namespace rg {

struct NegFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    return -x;
  }
};

}  // namespace rg
