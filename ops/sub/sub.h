#pragma once
// sub(a, b) = a - b with numpy broadcasting; sub(a, s) = a - s; sub(s, a) = s - a (PyTorch's
// torch.rsub(a, s)). Operators: a - b, a - s, s - a (unary -a lives in ops/neg).
// Backward: ga = sum_to_shape(gy, a.shape), gb = -sum_to_shape(gy, b.shape); the scalar forms
// pass gy (a - s) or -gy (s - a) through. Nothing is saved but the shapes.

#include "core/tensor.h"

namespace rg {

Tensor sub(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, double s);
Tensor sub(double s, const Tensor& a);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, double s);
Tensor operator-(double s, const Tensor& a);

}  // namespace rg
