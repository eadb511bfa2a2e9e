#pragma once
// tanh(x), elementwise; values in [-1, 1].
// Backward: gx = gy · (1 − y²). The node saves the output y only (as flashlight does).

#include "core/tensor.h"

namespace rg {

Tensor tanh(const Tensor& x);

}  // namespace rg
