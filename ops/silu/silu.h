#pragma once
// silu(x) = x·σ(x) = x / (1 + e⁻ˣ), elementwise (also called swish; Hendrycks & Gimpel,
// Ramachandran et al.). One pass over memory where the composition mul(x, sigmoid(x)) makes two
// forward and five backward (ops/README.md, "Add an op with the scaffold", measures both).
// Backward: gx = gy·σ(x)·(1 + x·(1 − σ(x))). The node captures the input x and the backward
// kernel recomputes σ(x): on a GPU, where the op is bound by memory, an exp costs less than
// writing σ(x) in the forward and reading it back. (On a CPU the exp dominates instead: the
// measurement in ops/README.md shows what that costs.)
// x: any shape, a floating dtype (f32, f64, f16, bf16), any device with a kernel.

#include "core/tensor.h"

namespace rg {

Tensor silu(const Tensor& x);

}  // namespace rg
