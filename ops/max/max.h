#pragma once
// max(x): the largest element, a 0-d tensor.
// max(x, dim, keepdim): the largest element along `dim` and its index there.
//   x: (d0, ..., dk)   values, indices: x's shape without `dim` (or with it as 1); indices i64
// NaN propagates (a lane holding NaN has max NaN, at the first NaN's index), as in PyTorch.
// Ties: indices points at the first occurrence, as PyTorch's CPU kernel does.
// Backward:
//   max(x, dim): gx = gy at the argmax of each lane, 0 elsewhere (the node keeps only indices);
//   max(x):      gy shared evenly among the elements equal to the max — PyTorch's rule for the
//                full reduction (evenly_distribute_backward); with one maximum it is the argmax.
// An empty tensor, or an empty `dim`, has no maximum: rg::Error.

#include "core/tensor.h"
#include "ops/reduction/reduction.h"

namespace rg {

struct MaxResult {
  Tensor values;
  Tensor indices;
};

Tensor max(const Tensor& x);
MaxResult max(const Tensor& x, int64_t dim, KeepDim keepdim = KeepDim::no);

}  // namespace rg
