#pragma once
// The CPU kernels of template_op (ops/template_op/template_op_cpu.cpp), declared for
// template_op.cpp. Contiguous tensors of one dtype, seen as `rows` rows of `cols` elements (cols:
// the last dim).

#include "core/tensor.h"

namespace rg {

// y[r] = Σ_c x[r, c]². y: rows; x: rows × cols.
void template_op_forward_cpu(const Tensor& y, const Tensor& x, int64_t rows, int64_t cols);
// gx[r, c] = 2·x[r, c]·gy[r] (outputs first, then inputs, as the forward).
void template_op_backward_cpu(const Tensor& gx, const Tensor& gy, const Tensor& x, int64_t rows,
                              int64_t cols);

}  // namespace rg
