#include "ops/matmul/gemm_plan.h"

#include <algorithm>

#include "ops/elementwise/elementwise.h"

namespace rg::detail {
namespace {

// The stored matrix of the last two dims of t (rows × cols) as cuBLAS reads it, or false when
// no unit stride and valid leading dimension describe it (then the caller copies). A
// row-major matrix (unit column stride) read as column-major is its transpose: our c = a·b is
// computed as cᵀ = bᵀ·aᵀ, so a row-major operand needs no CUBLAS_OP_T and a column-major one
// (a transposed view) does.
bool blas_layout(const Tensor& t, bool& transpose, int64_t& ld) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const int64_t rs = t.strides()[t.dim() - 2], cs = t.strides()[t.dim() - 1];
  // Row-major: stored column-major as a (cols × rows) matrix with ld = row stride ≥ cols.
  if (cols == 1 || cs == 1) {
    const int64_t lead = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    if (lead >= std::max<int64_t>(cols, 1)) {
      transpose = false;
      ld = lead;
      return true;
    }
  }
  // Column-major (a transposed view): stored as a (rows × cols) matrix with ld = column stride.
  if (rows == 1 || rs == 1) {
    const int64_t lead = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
    if (lead >= std::max<int64_t>(rows, 1)) {
      transpose = true;
      ld = lead;
      return true;
    }
  }
  return false;
}

// The one stride that steps through the batch dims of t (already expanded to the full batch)
// in row-major order, or false when they do not collapse into one (then the caller copies).
// Dims of size 1 never move; a fully broadcast batch has stride 0.
bool uniform_batch_stride(const Tensor& t, int64_t& stride) {
  const int64_t batch_dims = t.dim() - 2;
  bool found = false;
  int64_t inner_size = 1, inner_stride = 0;
  for (int64_t d = batch_dims - 1; d >= 0; --d) {
    const int64_t size = t.size(d), s = t.strides()[d];
    if (size == 1) continue;
    if (!found) {
      found = true;
      stride = s;
    } else if (s != inner_stride * inner_size) {
      return false;
    }
    inner_size = size;
    inner_stride = s;
  }
  if (!found) stride = 0;
  return true;
}

// t expanded to (full_batch..., rows, cols) and described as a cuBLAS operand.
BlasOperand make_operand(const Tensor& t, const Shape& full_batch) {
  Shape shape = full_batch;
  shape.push_back(t.size(-2));
  shape.push_back(t.size(-1));
  BlasOperand op;
  op.tensor = t.expand(shape);
  if (!blas_layout(op.tensor, op.transpose, op.ld) ||
      !uniform_batch_stride(op.tensor, op.batch_stride)) {
    op.tensor = op.tensor.contiguous();
    RG_CHECK(blas_layout(op.tensor, op.transpose, op.ld) &&
                 uniform_batch_stride(op.tensor, op.batch_stride),
             "gemm: no cuBLAS layout for ", t.describe());
  }
  return op;
}

}  // namespace

BlasGemmPlan plan_blas_gemm(const Tensor& a, const Tensor& b) {
  RG_CHECK(a.dim() >= 2 && b.dim() >= 2 && a.size(-1) == b.size(-2), "gemm: cannot multiply ",
           a.describe(), " by ", b.describe());
  BlasGemmPlan plan;
  plan.full_batch = broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                                     Shape(b.shape().begin(), b.shape().end() - 2), "matmul");
  plan.first = make_operand(b, plan.full_batch);
  plan.second = make_operand(a, plan.full_batch);
  plan.m = b.size(-1);
  plan.n = a.size(-2);
  plan.k = a.size(-1);
  plan.batch = numel_of(plan.full_batch);
  return plan;
}

}  // namespace rg::detail
