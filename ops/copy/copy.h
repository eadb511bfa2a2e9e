#pragma once
// clone(x): a fresh contiguous copy of x (same dtype and device); differentiable, gx = gy.
//
// copy_(dst, src): writes src into dst in place and returns dst. src is broadcast to dst's
// shape (numpy rules, src may not be larger) and converted to dst's dtype (any dtypes, as
// cast does), and may live on another device. It is how parameters are initialised and
// loaded, under NoGradGuard.
//
// copy_ is NOT differentiable. Recording it would mean rewriting dst's history in place and
// detecting stale saved copies of dst (PyTorch's version counters), which ringgrad does not
// have. So, while grad mode is on, it throws rg::Error when src requires grad (the gradient
// would be silently lost) or when dst does (a leaf parameter, or a graph output whose recorded
// history would no longer match its values). Use clone() / ops to build differentiable
// copies, and NoGradGuard for plain data movement.
// Aliasing: a src that shares storage with dst is read completely before dst is written; a dst
// in which several elements share one memory location (an expand()ed view) is rejected.

#include "core/tensor.h"

namespace rg {

Tensor clone(const Tensor& x);
Tensor copy_(const Tensor& dst, const Tensor& src);

}  // namespace rg
