// The cuBLAS layout of matmul's GEMMs (ops/matmul/gemm_plan.h), tested without a GPU: each plan
// is run through a reference of cuBLAS's strided-batched GEMM as its documentation defines it
// (column-major, op(X) = X or Xᵀ, element (r, c) at ptr[r + c·ld], batch item i at
// ptr + i·stride) reading the raw memory the plan hands cuBLAS, and compared with the CPU matmul.
#include <gtest/gtest.h>

#include "ops/matmul/gemm_plan.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;
using detail::BlasGemmPlan;
using detail::BlasOperand;

// Element (r, c) of op(X) for batch item i.
double read(const BlasOperand& x, int64_t i, int64_t r, int64_t c) {
  const auto* p = static_cast<const double*>(x.tensor.data_ptr()) + i * x.batch_stride;
  return x.transpose ? p[c + r * x.ld] : p[r + c * x.ld];
}

// cuBLAS's C_i = op(A_i)·op(B_i) with C column-major (ldc = m, batch stride m·n), returned as
// our row-major (full_batch..., n, m) output.
Tensor run_like_cublas(const BlasGemmPlan& p) {
  Shape shape = p.full_batch;
  shape.push_back(p.n);
  shape.push_back(p.m);
  Tensor out = empty(shape, {DType::f64});
  auto* c = static_cast<double*>(out.data_ptr());
  for (int64_t i = 0; i < p.batch; ++i)
    for (int64_t col = 0; col < p.n; ++col)
      for (int64_t row = 0; row < p.m; ++row) {
        double acc = 0;
        for (int64_t l = 0; l < p.k; ++l)
          acc += read(p.first, i, row, l) * read(p.second, i, l, col);
        c[i * p.m * p.n + row + col * p.m] = acc;
      }
  return out;
}

// cuBLAS's own argument checks (it rejects ld below the stored rows).
void expect_valid_leading_dims(const BlasGemmPlan& p) {
  const int64_t first_rows = p.first.transpose ? p.k : p.m;
  const int64_t second_rows = p.second.transpose ? p.n : p.k;
  EXPECT_GE(p.first.ld, std::max<int64_t>(1, first_rows));
  EXPECT_GE(p.second.ld, std::max<int64_t>(1, second_rows));
}

// Plans a·b, runs it like cuBLAS and compares with the CPU matmul; returns the plan.
BlasGemmPlan check(const Tensor& a, const Tensor& b) {
  const BlasGemmPlan plan = detail::plan_blas_gemm(a, b);
  expect_valid_leading_dims(plan);
  const Tensor expected = matmul(a, b);
  const Tensor actual = run_like_cublas(plan);
  EXPECT_EQ(actual.shape(), expected.shape());
  EXPECT_TRUE(all_close(actual, expected, 1e-12, 1e-12))
      << shape_str(a.shape()) << " strides " << shape_str(a.strides()) << " times "
      << shape_str(b.shape()) << " strides " << shape_str(b.strides());
  return plan;
}

Tensor rnd(const Shape& shape) {
  return randn(shape, {DType::f64});
}

bool shares_memory(const BlasOperand& op, const Tensor& t) {
  return op.tensor.data_ptr() == t.data_ptr();
}

TEST(BlasGemmPlan, RowMajorAndTransposedOperandsAreReadInPlace) {
  const Tensor a = rnd({3, 4}), b = rnd({4, 5});
  const Tensor at = rnd({4, 3}).transpose(0, 1), bt = rnd({5, 4}).transpose(0, 1);
  for (const Tensor& x : {a, at})
    for (const Tensor& y : {b, bt}) {
      const BlasGemmPlan p = check(x, y);
      EXPECT_TRUE(shares_memory(p.second, x) && shares_memory(p.first, y))
          << "an operand was copied";
      EXPECT_EQ(p.second.transpose, !x.is_contiguous());
      EXPECT_EQ(p.first.transpose, !y.is_contiguous());
    }
}

TEST(BlasGemmPlan, SlicedMatricesKeepTheirLeadingDimension) {
  const Tensor a = rnd({5, 9}).narrow(1, 2, 4);   // (5, 4) with row stride 9
  const Tensor b = rnd({4, 11}).narrow(1, 1, 3);  // (4, 3) with row stride 11
  const BlasGemmPlan p = check(a, b);
  EXPECT_EQ(p.second.ld, 9);
  EXPECT_EQ(p.first.ld, 11);
}

TEST(BlasGemmPlan, VectorsAndSingleElementMatrices) {
  check(rnd({1, 4}), rnd({4, 1}));
  check(rnd({4, 1}), rnd({1, 3}));
  check(rnd({1, 1}), rnd({1, 1}));
  check(rnd({3, 4}), rnd({4, 7}).narrow(1, 2, 1));            // a column with stride 7
  check(rnd({5, 4}).narrow(0, 1, 1), rnd({4, 2}));            // a row
  check(rnd({3, 2}).select(1, 0).unsqueeze(0), rnd({3, 2}));  // a row with stride 2
}

TEST(BlasGemmPlan, BatchesContiguousBroadcastAndMixed) {
  const BlasGemmPlan same = check(rnd({2, 3, 4}), rnd({2, 4, 5}));
  EXPECT_EQ(same.batch, 2);
  EXPECT_EQ(same.second.batch_stride, 12);
  const BlasGemmPlan shared = check(rnd({3, 4}), rnd({6, 4, 5}));  // one a for every item
  EXPECT_EQ(shared.second.batch_stride, 0);
  const BlasGemmPlan unit = check(rnd({1, 3, 4}), rnd({6, 4, 5}));
  EXPECT_EQ(unit.second.batch_stride, 0);
  check(rnd({2, 1, 3, 4}), rnd({1, 5, 4, 2}));  // each side broadcast along a different dim
  check(rnd({2, 3, 3, 4}), rnd({3, 4, 2}));
  check(rnd({4, 2, 3, 4}).transpose(0, 1), rnd({2, 4, 4, 5}));  // batch dims out of order
  check(rnd({3, 2, 4}).transpose(0, 1).transpose(-1, -2).contiguous().transpose(-1, -2),
        rnd({2, 4, 3}));
}

TEST(BlasGemmPlan, LayoutsNoLeadingDimensionDescribesAreCopied) {
  const Tensor every_other = rnd({3, 4, 2}).select(2, 0);  // (3, 4), no unit stride
  const BlasGemmPlan p = check(every_other, rnd({4, 2}));
  EXPECT_FALSE(shares_memory(p.second, every_other));
  const Tensor repeated_rows = rnd({1, 4}).expand({3, 4});  // row stride 0
  const BlasGemmPlan q = check(repeated_rows, rnd({4, 2}));
  EXPECT_FALSE(shares_memory(q.second, repeated_rows));
}

TEST(BlasGemmPlan, MismatchedShapesAreAClearError) {
  EXPECT_TRUE(throws_error(
      [] {
        detail::plan_blas_gemm(rnd({3, 4}), rnd({5, 2}));
      },
      {"gemm", "cannot multiply"}));
  EXPECT_TRUE(throws_error(
      [] {
        detail::plan_blas_gemm(rnd({2, 3, 4}), rnd({3, 4, 2}));
      },
      {"matmul", "broadcast"}));
}

}  // namespace
}  // namespace rg
