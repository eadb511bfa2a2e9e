#pragma once
// The CPU GEMM of the ops layer (matmul, linear): Eigen's single-threaded GEMM on strided
// matrix views, multithreaded by splitting the output (rows, columns or the batch) across
// rg::parallel_for threads. Not a public op: code above ops/ calls matmul() or linear().
//
// Why split outside Eigen: Eigen's own threading (OpenMP) parallelises inside each product,
// which pays off only for big square GEMMs; splitting the output across threads, each running
// a plain single-threaded GEMM on its own part, measured ~2x faster on the small-to-medium
// products of a CIFAR ResNet on this 2-core machine (see DESIGN.md, performance notes).

#include <cstdint>
#include <utility>

#include "core/tensor.h"

namespace rg::detail {

// A dense matrix in memory: element (i, j) at data[i * outer + j] (row-major) or
// data[j * outer + i] (column-major). A transposed view of a row-major matrix is column-major,
// so transposes never need a copy.
template <class T>
struct MatRef {
  T* data = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t outer = 1;  // distance between consecutive rows (row-major) / columns (col-major)
  bool col_major = false;
};

// c (+)= a · b, with c row-major. accumulate=false overwrites c. Large products are split
// across threads (a nested call — inside a parallel_for — runs on the calling thread only).
// a: (n, k), b: (k, m), c: (n, m)
template <class T>
void gemm(const MatRef<const T>& a, const MatRef<const T>& b, const MatRef<T>& c, bool accumulate);

// True when the last two dims of t form a matrix Eigen can read in place: one of the two
// strides is 1 (the other > 0), or the matrix is a single row/column.
bool gemm_layout_ok(const Tensor& t);
// t itself when gemm_layout_ok(t), else a contiguous copy.
Tensor gemm_ready(const Tensor& t);
// The matrix formed by the last two dims of t (gemm_layout_ok(t) must hold), starting
// `element_offset` elements after t's first element (a batch item).
template <class T>
MatRef<const T> mat_ref(const Tensor& t, int64_t element_offset = 0);

template <class T>
MatRef<T> transposed(MatRef<T> m) {
  std::swap(m.rows, m.cols);
  m.col_major = !m.col_major;
  return m;
}

// out[β] = Σ a[b'] · b[b''] — the batched matrix product behind matmul and its gradients.
// a: (A..., n, k), b: (B..., k, m); the batch shapes A and B broadcast to F. The result has
// batch shape out_batch, which F must reduce to (as sum_to_shape: missing leading dims and
// size-1 dims are summed over), so a broadcast operand's gradient is accumulated in place
// instead of materialising one product per batch element. Returns (out_batch..., n, m), a
// fresh contiguous tensor of a's dtype. f16/bf16 go through f32. No autograd.
Tensor batched_matmul(const Tensor& a, const Tensor& b, const Shape& out_batch);

// The shared threshold: products below this many multiply-adds run on one thread.
inline constexpr double kGemmParallelMinFlops = double(1 << 21);

}  // namespace rg::detail
