#pragma once
// Host/device math of template_op, shared by the CPU loop and the CUDA kernel.

#include "core/macros.h"

namespace rg {

struct TemplateOpFn {
  template <class C>
  RG_HOST_DEVICE C operator()(C x) const {
    return x * x * x;
  }
};

struct TemplateOpGradFn {  // (gy, x) -> gx = 3·x²·gy
  template <class C>
  RG_HOST_DEVICE C operator()(C gy, C x) const {
    return C(3) * x * x * gy;
  }
};

}  // namespace rg
