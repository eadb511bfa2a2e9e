#pragma once
// relu(x) = max(x, 0), elementwise.
// Backward: gx = gy · [y > 0]. The node captures the output y, not x (the same test, and y is
// kept alive by the next layer anyway).

#include "core/tensor.h"

namespace rg {

Tensor relu(const Tensor& x);

}  // namespace rg
