#pragma once
// template_op(x) = x³, elementwise. (The scaffold's placeholder formula: replace it here, in
// template_op_cpu.cpp (the CPU kernels, the reference) and template_op_kernels.cuh (the CUDA
// kernels, also run through the emulator by the op's spec), and in template_op_fixture.py,
// PyTorch's reference.)
// Backward: gx = 3·x²·gy. The backward saves the input x (the output alone cannot give x² without
// a cube root).
// x: any shape, a floating dtype (f32, f64, f16, bf16), any device with a kernel.

#include "core/tensor.h"

namespace rg {

Tensor template_op(const Tensor& x);

}  // namespace rg
