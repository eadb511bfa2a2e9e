#pragma once
// cat: joins tensors along one dim.
//   tensors[k]: (..., D_k, ...) with equal sizes elsewhere -> y: (..., D_0 + D_1 + ..., ...)
// Backward: input k receives the slice gy.narrow(dim, D_0 + ... + D_{k−1}, D_k) (a view).
// The node keeps only the sizes D_k.

#include <vector>

#include "core/tensor.h"

namespace rg {

// Checks: a non-empty list; one dtype (any, integers too: no promotion), one device and one
// number of dims (>= 1) for all; equal sizes except along dim.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);

}  // namespace rg
