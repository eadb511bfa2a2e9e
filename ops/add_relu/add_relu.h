#pragma once
// add_relu(a, b) = relu(a + b), elementwise with broadcasting, in one pass: the residual
// join of a ResNet block (relu(bn2(conv2(y)) + shortcut)) without writing a + b to memory and
// reading it back.
// Backward: g = gy · [y > 0]; ga = sum_to_shape(g, a), gb = sum_to_shape(g, b). The node
// captures the output y (as relu's does), not a or b.
// Bit-identical to relu(add(a, b)) in every dtype: the sum is rounded to the dtype once either
// way (16-bit types are computed in f32, and max(round(s), 0) = round(max(s, 0))).

#include "core/tensor.h"

namespace rg {

Tensor add_relu(const Tensor& a, const Tensor& b);

}  // namespace rg
