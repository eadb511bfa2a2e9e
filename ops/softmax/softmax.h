#pragma once
// softmax(x, dim)_c = exp(x_c − m) / Σ_k exp(x_k − m), over `dim`, with m = max_k x_k.
//   x, y: any shape; `dim` may be negative
// Subtracting the lane maximum changes nothing mathematically but keeps exp() from
// overflowing (x = 1000 would give inf/inf = NaN); the largest term becomes exp(0) = 1, so the
// sum is at least 1 and never underflows to 0 either.
// Backward (the node keeps only y): gx = y · (gy − Σ_c gy_c·y_c).

#include "core/tensor.h"

namespace rg {

Tensor softmax(const Tensor& x, int64_t dim);

}  // namespace rg
