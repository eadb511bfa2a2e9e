#pragma once
// mul(a, b) = a · b elementwise with numpy broadcasting; mul(a, s) = a · s.
// Operators: a * b, a * s, s * a.
// Backward: ga = sum_to_shape(gy · b, a.shape), gb = sum_to_shape(gy · a, b.shape). The node
// keeps b only when a needs a gradient and a only when b does (a weight times a frozen mask
// keeps just the mask); the scalar form keeps only s.

#include "core/tensor.h"

namespace rg {

Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, double s);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, double s);
Tensor operator*(double s, const Tensor& a);

}  // namespace rg
