#pragma once
// sigmoid(x) = σ(x) = 1 / (1 + e⁻ˣ), elementwise; values in [0, 1].
// Backward: gx = gy · y · (1 − y). The node saves the output y only.

#include "core/tensor.h"

namespace rg {

Tensor sigmoid(const Tensor& x);

}  // namespace rg
