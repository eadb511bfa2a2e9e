#pragma once
// sqrt(x) = √x, elementwise. Like PyTorch it does not check the domain: sqrt(x < 0) = nan.
// Backward: gx = gy / (2y). The node saves the output y.

#include "core/tensor.h"

namespace rg {

Tensor sqrt(const Tensor& x);

}  // namespace rg
