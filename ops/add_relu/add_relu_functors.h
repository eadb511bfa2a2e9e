#pragma once
// Host/device math of add_relu, shared by the CPU loop and the CUDA kernel. The backward is
// relu's own ReluGradFn (relu/relu_functors.h) on the saved output.

#include "core/macros.h"

namespace rg {

struct AddReluFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C a, C b) const {
    const C s = a + b;
    return s > C(0) ? s : C(0);
  }
};

}  // namespace rg
