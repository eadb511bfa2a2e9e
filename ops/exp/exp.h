#pragma once
// exp(x) = eˣ, elementwise (overflows to +inf above ≈ 88.7 in f32, 11.1 in f16, like PyTorch).
// Backward: gx = gy · y. The node saves the output y: it is the derivative itself, so the
// input is not needed at all.

#include "core/tensor.h"

namespace rg {

Tensor exp(const Tensor& x);

}  // namespace rg
