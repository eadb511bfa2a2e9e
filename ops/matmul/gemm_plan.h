#pragma once
// How a batched matrix product is handed to cuBLAS's strided-batched GEMM. Host code only (no
// CUDA header), so it is compiled and tested in every build: the test runs a plan through a
// reference of cuBLAS's documented semantics on the CPU and compares with the CPU matmul.
//
// cuBLAS is column-major: element (r, c) of a matrix with leading dimension ld is at
// ptr[r + c * ld]. Our tensors are row-major, and a row-major (rows × cols) matrix read as
// column-major is its transpose. So our c = a·b is computed as cᵀ = bᵀ·aᵀ: cuBLAS's first
// operand is our b, its second our a, and its column-major m × n result is our row-major
// (rows × cols) output, with no copy of any operand whose last two dims have a unit stride.

#include <cstdint>

#include "core/tensor.h"

namespace rg::detail {

// One cuBLAS operand: `tensor` holds the memory (the caller's tensor, or a copy when its
// layout cannot be described by a leading dimension and one batch stride).
struct BlasOperand {
  Tensor tensor;
  bool transpose = false;    // CUBLAS_OP_T: the stored column-major matrix is transposed
  int64_t ld = 1;            // leading dimension, ≥ the stored matrix's row count
  int64_t batch_stride = 0;  // elements between consecutive batch items; 0 = one shared matrix
};

// for i < batch: C_i (m × n, column-major, ldc = m, batch stride m·n) = op(first_i)·op(second_i).
struct BlasGemmPlan {
  BlasOperand first, second;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  Shape full_batch;  // the broadcast batch shape of a and b; the output is (full_batch..., n, m)
};

// a: (A..., rows, k), b: (B..., k, cols), on any device; A and B must broadcast.
BlasGemmPlan plan_blas_gemm(const Tensor& a, const Tensor& b);

}  // namespace rg::detail
