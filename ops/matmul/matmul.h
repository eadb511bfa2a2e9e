#pragma once
// matmul(a, b): the matrix product with PyTorch's rules.
//   a: (n, k),       b: (k, m)        -> (n, m)
//   a: (k),          b: (k)           -> ()          dot product
//   a: (n, k),       b: (k)           -> (n)         matrix-vector
//   a: (k),          b: (k, m)        -> (m)         vector-matrix
//   a: (A..., n, k), b: (B..., k, m)  -> (F..., n, m)  batched; A and B broadcast to F, e.g.
//                                         (B, n, k)·(k, m) and (B, n, k)·(B, k, m)
// A 1-D operand is treated as a row (a) or column (b) matrix whose extra dim is dropped again.
// Backward: ga = gy·bᵀ, gb = aᵀ·gy, summed over the batch dims an operand was broadcast along
// (accumulated in place by the GEMMs, never materialised per batch element).
// CPU: Eigen GEMM; large products split their output (rows, columns or the batch) across
// rg::parallel_for threads, each running a single-threaded GEMM (see ops/matmul/gemm.h).
// Dtypes: f32, f64; f16/bf16 compute in f32.

#include "core/tensor.h"

namespace rg {

Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace rg
