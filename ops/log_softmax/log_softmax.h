#pragma once
// log_softmax(x, dim)_c = x_c − m − log Σ_k exp(x_k − m), over `dim`, with m = max_k x_k.
//   x, y: any shape; `dim` may be negative
// Computed directly, never as log(softmax(x)): a probability that underflows to 0 in softmax
// would give log(0) = −inf here, while x_c − logsumexp stays finite.
// Backward (the node keeps only y): gx = gy − exp(y) · Σ_c gy_c.

#include "core/tensor.h"

namespace rg {

Tensor log_softmax(const Tensor& x, int64_t dim);

}  // namespace rg
