#pragma once
// The GEMMs of the ops layer (matmul, linear). On the CPU: Eigen's single-threaded GEMM on
// strided matrix views, multithreaded by splitting the output (rows, columns or the batch) across
// rg::parallel_for threads. Not a public op: code above ops/ calls matmul() or linear().
//
// Why split outside Eigen: Eigen's own threading (OpenMP) parallelises inside each product,
// which pays off only for big square GEMMs; splitting the output across threads, each running
// a plain single-threaded GEMM on its own part, measured ~2x faster on the small-to-medium
// products of a CIFAR ResNet on this 2-core machine (see DESIGN.md, performance notes).
//
// On a GPU: cuBLAS's strided-batched GEMM (ops/matmul/gemm_plan.h says how operands are laid
// out for it), f32 accumulation for f16/bf16, no TF32 (PyTorch's default for matmul too).

#include <cstdint>
#include <utility>

#include "core/dispatch.h"
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
// fresh contiguous tensor of a's dtype, on a's device. f16/bf16 accumulate in f32, and a
// batch reduction sums the f32 products before rounding. No autograd.
Tensor batched_matmul(const Tensor& a, const Tensor& b, const Shape& out_batch);
Tensor batched_matmul(OnCpu, const Tensor& a, const Tensor& b, const Shape& out_batch);
Tensor batched_matmul(OnCuda, const Tensor& a, const Tensor& b, const Shape& out_batch);

// GPU only: out (+)= a·b through cuBLAS, where out is a contiguous (F..., n, m) tensor of a's
// dtype (or f32 for 16-bit a and b) and F the broadcast batch shape of a and b.
void gemm_into(OnCuda, const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate);

// The shared threshold: products below this many multiply-adds run on one thread.
inline constexpr double kGemmParallelMinFlops = double(1 << 21);

}  // namespace rg::detail
