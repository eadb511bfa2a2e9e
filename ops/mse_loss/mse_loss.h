#pragma once
// mse_loss(x, y, reduction): the squared error (x − y)², as torch.nn.functional.mse_loss.
//   x, y: any shape, the same (PyTorch broadcasts with a warning that it is probably a bug;
//         ringgrad refuses: the error names both shapes)
//   out:  reduction none: x's shape; mean, sum: ()
//   none: (x − y)²      sum: Σ (x − y)²      mean: Σ (x − y)² / numel   (sums in double)
// Backward: gx = 2·(x − y)·g, gy = −gx, with g = gy_out (none, sum) or gy_out / numel (mean).

#include "core/tensor.h"
#include "ops/reduction/reduction.h"

namespace rg {

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);

}  // namespace rg
