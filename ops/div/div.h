#pragma once
// div(a, b) = a / b elementwise with numpy broadcasting (true division; b = 0 gives ±inf or
// nan as IEEE says); div(a, s) = a / s; div(s, a) = s / a. Operators: a / b, a / s, s / a.
// Backward: ga = sum_to_shape(gy / b, a.shape), gb = sum_to_shape(-gy · y / b, b.shape)
// (y = a / b, the output). The node keeps b when either input needs a gradient and y only when
// b does. Scalar forms: a / s keeps only s; s / a keeps a (ga = -gy · s / a²).

#include "core/tensor.h"

namespace rg {

Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, double s);
Tensor div(double s, const Tensor& a);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, double s);
Tensor operator/(double s, const Tensor& a);

}  // namespace rg
