#pragma once
// cast(x, dtype): x converted elementwise to dtype — the op-level name of Tensor::to(DType),
// which it calls, so the two always agree:
//   - to the same dtype: x itself (no copy), as torch's x.to(x.dtype);
//   - to f16/bf16: round to nearest even (from f64 with one correct rounding);
//   - float to i64/u8: truncation toward zero; nan and out-of-range values give unspecified
//     results, as in PyTorch.
// Backward (floating targets only): gx = gy converted back to x's dtype. An integer result is
// not differentiable: it does not require grad even when x does.

#include "core/tensor.h"

namespace rg {

Tensor cast(const Tensor& x, DType dtype);

}  // namespace rg
