#pragma once
// pow(x, e) = xᵉ elementwise, in three forms:
//   pow(x, double e)          tensor base, scalar exponent
//   pow(x, Tensor e)          tensor base and exponent, numpy broadcasting
//   pow(double base, Tensor e) scalar base, tensor exponent
// (No operator^: in C++ it binds looser than + and would silently misparse x ^ 2 + 1.)
//
// Domain: as in PyTorch nothing is checked. A negative base with a non-integer exponent gives
// nan; 0 to a negative power gives inf.
// Backward:
//   gx = gy · e·xᵉ⁻¹, taken as exactly 0 where e = 0 (so x = 0 does not give 0·inf = nan);
//   ge = gy · y·ln x, which needs x > 0 to be finite: x < 0 gives nan, and at x = 0 the
//        gradient is taken as 0 when e >= 0 (PyTorch's convention), -inf·gy when e < 0.
//   Broadcast operands receive sum_to_shape of their gradient.
// Saved: the scalar-exponent form keeps x; the tensor form keeps x, plus e when x needs a
// gradient and the output y when e needs one; the scalar-base form keeps only y.

#include "core/tensor.h"

namespace rg {

Tensor pow(const Tensor& x, double exponent);
Tensor pow(const Tensor& x, const Tensor& exponent);
Tensor pow(double base, const Tensor& exponent);

}  // namespace rg
