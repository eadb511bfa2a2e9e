#pragma once
// add(a, b) = a + b with numpy broadcasting; add(a, s) adds a scalar.
// Backward: ga = sum_to_shape(gy, a.shape), gb = sum_to_shape(gy, b.shape) — a broadcast
// operand receives the sum over the dims it was broadcast along.

#include "core/tensor.h"

namespace rg {

Tensor add(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double s);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double s);
Tensor operator+(double s, const Tensor& a);

}  // namespace rg
