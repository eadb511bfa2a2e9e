#pragma once
// mean(x) = Σ_i x_i / n over all elements: a 0-d tensor.
// mean(x, dims, keepdim) averages over `dims` (negative dims count from the back; an empty
// list means every dim). With KeepDim::yes the reduced dims stay as size 1.
//   x: (d0, ..., dk)   y: x's shape without the reduced dims (or with them as 1)
// The mean of zero elements is NaN, as in PyTorch. Accumulates in double (ops/sum).
// Backward: gx = gy / count broadcast back over the reduced dims.

#include <vector>

#include "core/tensor.h"
#include "ops/reduction/reduction.h"

namespace rg {

Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, KeepDim keepdim = KeepDim::no);

}  // namespace rg
