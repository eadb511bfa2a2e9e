#pragma once
// gelu(x) = x·Φ(x) = ½·x·(1 + erf(x/√2)), elementwise: PyTorch's nn.GELU() (approximate='none'),
// the activation of airbench94. Backward: gx = gy·(Φ(x) + x·φ(x)), φ(x) = exp(−x²/2)/√(2π).
// The node captures the input x. x: any shape, a floating dtype (f32, f64, f16, bf16; 16-bit
// computed in f32), any device with a kernel.

#include "core/tensor.h"

namespace rg {

Tensor gelu(const Tensor& x);

}  // namespace rg
