#pragma once
// linear(x, weight, bias) = x·weightᵀ + bias, the fully connected layer.
//   x: (..., I)   weight: (O, I)   bias: (O) or undefined   ->   y: (..., O)
// with I input and O output features; the leading dims of x are flattened into M rows.
// Backward (x2 = x as (M, I), gy2 = gy as (M, O)):
//   gx = gy2·weight (M, I),  gweight = gy2ᵀ·x2 (O, I),  gbias = Σ_rows gy2 (O)
// Every product reads the transposed operand in place (no materialised transposes), and only
// the gradients of inputs that require grad are computed.
// Dtypes: f32, f64; f16/bf16 compute in f32.

#include "core/tensor.h"

namespace rg {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace rg
