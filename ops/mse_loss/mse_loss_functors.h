#pragma once
// Host/device math of mse_loss, shared by the CPU loop and the CUDA kernel.

#include "core/macros.h"

namespace rg {

struct SquaredErrorFn {  // (x, y) -> (x − y)²
  template <class C>
  RG_HOST_DEVICE C operator()(C x, C y) const {
    const C d = x - y;
    return d * d;
  }
};

struct SquaredErrorGradFn {  // (g, x, y) -> ±2·(x − y)·g·scale
  double scale;              // 2/numel (mean) or 2, negated for the target
  template <class C>
  RG_HOST_DEVICE C operator()(C g, C x, C y) const {
    return static_cast<C>(scale) * (x - y) * g;
  }
};

}  // namespace rg
