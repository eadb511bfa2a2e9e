#pragma once
// softsign(x) = x / (1 + |x|), elementwise: an op defined outside ringgrad, on its engine.
// Backward: gx = gy / (1 + |x|)². The node captures the input x.

#include "core/tensor.h"

namespace my {

rg::Tensor softsign(const rg::Tensor& x);

}  // namespace my
