#pragma once
// neg(x) = -x, elementwise; also the unary operator -x.
// Backward: gx = -gy. The node saves nothing.

#include "core/tensor.h"

namespace rg {

Tensor neg(const Tensor& x);
Tensor operator-(const Tensor& x);

}  // namespace rg
