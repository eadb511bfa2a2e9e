#pragma once
// The CPU kernels of template_op (ops/template_op/template_op_cpu.cpp), declared for
// template_op.cpp. Contiguous tensors of one dtype; the op makes them so.

#include "core/tensor.h"

namespace rg {

// y = x³ elementwise. y, x: n elements.
void template_op_forward_cpu(const Tensor& y, const Tensor& x);
// gx = 3·x²·gy elementwise (forward and backward side by side: outputs, then inputs).
void template_op_backward_cpu(const Tensor& gx, const Tensor& gy, const Tensor& x);

}  // namespace rg
