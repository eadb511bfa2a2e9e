#pragma once
// template_op(x) = Σ_c x[..., c]², the sum of squares over the last dim: (..., C) -> (...).
// (The scaffold's placeholder formula: replace it here, in template_op_cpu.cpp (the CPU kernels,
// the reference) and template_op_kernels.cuh (the CUDA kernels, also run through the emulator by
// the op's spec), and in template_op_fixture.py, PyTorch's reference.)
// Backward: gx[..., c] = 2·x[..., c]·gy[...]. The backward saves the input x.
// x: at least one dim, a floating dtype (f32, f64, f16, bf16), any device with a kernel.

#include "core/tensor.h"

namespace rg {

Tensor template_op(const Tensor& x);

}  // namespace rg
