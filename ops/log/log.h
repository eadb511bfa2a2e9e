#pragma once
// log(x) = ln x, elementwise. Like PyTorch it does not check the domain: log(0) = -inf and
// log(x < 0) = nan, so a bad value shows up in the result instead of an exception halfway
// through a batch.
// Backward: gx = gy / x (PyTorch's formula, applied even where x <= 0). The node saves x.

#include "core/tensor.h"

namespace rg {

Tensor log(const Tensor& x);

}  // namespace rg
