#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/thread_pool.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

Tensor mm_fn(const std::vector<Tensor>& in) {
  return matmul(in[0], in[1]);
}

// The plain reference: y[i, j] = Σ_k a[i, k]·b[k, j] in f64, for 2-D operands of any layout.
Tensor reference_mm(const Tensor& a, const Tensor& b) {
  const std::vector<double> av = a.contiguous().to_vector<double>();
  const std::vector<double> bv = b.contiguous().to_vector<double>();
  const int64_t n = a.size(0), k = a.size(1), m = b.size(1);
  std::vector<double> y(static_cast<std::size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < m; ++j) y[i * m + j] += av[i * k + p] * bv[p * m + j];
  return from_vector(y, {n, m}, {DType::f64});
}

// Runs body with `threads` threads, restoring the previous count after.
template <class F>
void with_threads(int threads, F body) {
  const int before = num_threads();
  set_num_threads(threads);
  body();
  set_num_threads(before);
}

TEST(Matmul, Gradcheck2dAnd1d) {
  EXPECT_TRUE(gradcheck(mm_fn, {grad_input({3, 4}), grad_input({4, 2}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(mm_fn, {grad_input({3, 4}), grad_input({4}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(mm_fn, {grad_input({4}), grad_input({4, 2}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(mm_fn, {grad_input({4}), grad_input({4}, -1, 1, 2)}));
}

TEST(Matmul, GradcheckBatchedAndBroadcast) {
  EXPECT_TRUE(gradcheck(mm_fn, {grad_input({2, 3, 4}), grad_input({2, 4, 2}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(mm_fn, {grad_input({2, 3, 4}), grad_input({4, 2}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(mm_fn, {grad_input({3, 4}), grad_input({2, 4, 2}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(mm_fn, {grad_input({2, 1, 2, 3}), grad_input({3, 3, 2}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(mm_fn, {grad_input({3}), grad_input({2, 3, 2}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(mm_fn, {grad_input({2, 2, 3}), grad_input({3}, -1, 1, 2)}));
}

TEST(Matmul, GradcheckNonContiguousOperands) {
  // Transposed views are read in place (column-major); an expanded batch has stride 0.
  auto fn = [](const std::vector<Tensor>& in) {
    return matmul(in[0].transpose(0, 1), in[1].transpose(-1, -2));
  };
  EXPECT_TRUE(gradcheck(fn, {grad_input({4, 3}), grad_input({2, 2, 4}, -1, 1, 2)}));
  auto expanded = [](const std::vector<Tensor>& in) {
    return matmul(in[0].expand({2, 3, 4}), in[1]);
  };
  EXPECT_TRUE(gradcheck(expanded, {grad_input({1, 3, 4}), grad_input({2, 4, 2}, -1, 1, 2)}));
}

TEST(Matmul, MatchesPyTorch) {
  Fixture f("matmul");
  for (const char* name : {"mm", "mv", "vm", "dot", "bmm", "bcast_b", "bcast_a", "bcast4", "vb"}) {
    SCOPED_TRACE(name);
    const std::string p = std::string(name) + ".";
    Tensor a = f[p + "a"].set_requires_grad(true), b = f[p + "b"].set_requires_grad(true);
    Tensor y = matmul(a, b);
    EXPECT_TRUE(all_close(y, f[p + "y"]));
    y.backward(f[p + "gy"]);
    EXPECT_TRUE(all_close(a.grad(), f[p + "ga"]));
    EXPECT_TRUE(all_close(b.grad(), f[p + "gb"]));
  }
}

TEST(Matmul, LargeProductsMatchReferenceOnAnyThreadCount) {
  // Above the parallel threshold: row split (n >= m), column split (n < m), transposed operand.
  const Tensor a = rand({150, 130}, {DType::f64}), b = rand({130, 170}, {DType::f64});
  const Tensor wide_a = rand({20, 300}, {DType::f64}), wide_b = rand({300, 900}, {DType::f64});
  const Tensor bt = rand({170, 130}, {DType::f64}).transpose(0, 1);
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(threads);
    with_threads(threads, [&] {
      EXPECT_TRUE(all_close(matmul(a, b), reference_mm(a, b), 1e-11, 1e-11));
      EXPECT_TRUE(all_close(matmul(wide_a, wide_b), reference_mm(wide_a, wide_b), 1e-11, 1e-11));
      EXPECT_TRUE(all_close(matmul(a, bt), reference_mm(a, bt), 1e-11, 1e-11));
    });
  }
}

TEST(Matmul, BatchedSplitsMatchReference) {
  // 4 items (split over the batch), 3 items of a big product (each GEMM split inside), and a
  // broadcast a whose gradient sums over the batch.
  for (int64_t items : {4, 3}) {
    const Tensor a = rand({items, 120, 140}, {DType::f64}),
                 b = rand({items, 140, 130}, {DType::f64});
    with_threads(2, [&] {
      const Tensor y = matmul(a, b);
      for (int64_t i = 0; i < items; ++i)
        EXPECT_TRUE(
            all_close(y.select(0, i), reference_mm(a.select(0, i), b.select(0, i)), 1e-11, 1e-11));
    });
  }
  const Tensor a = rand({120, 140}, {DType::f64}).set_requires_grad(true);
  const Tensor b = rand({3, 140, 130}, {DType::f64});
  const Tensor gy = rand({3, 120, 130}, {DType::f64});
  with_threads(2, [&] { matmul(a, b).backward(gy); });
  Tensor expected = zeros({120, 140}, {DType::f64});
  for (int64_t i = 0; i < 3; ++i)
    add_inplace(expected, reference_mm(gy.select(0, i), b.select(0, i).transpose(0, 1)));
  EXPECT_TRUE(all_close(a.grad(), expected, 1e-10, 1e-11));
}

TEST(Matmul, HalfPrecisionComputesInF32) {
  const Tensor a = rand({5, 7}), b = rand({7, 3});
  const Tensor y = matmul(a.to(DType::bf16), b.to(DType::bf16));
  EXPECT_EQ(y.dtype(), DType::bf16);
  EXPECT_TRUE(all_close(y, matmul(a, b), 0.05, 0.02));
}

TEST(Matmul, EmptyInnerDimGivesZeros) {
  const Tensor y = matmul(ones({2, 0}), ones({0, 3}));
  EXPECT_TRUE(all_close(y, zeros({2, 3})));
}

TEST(Matmul, BadShape) {
  EXPECT_TRUE(throws_error(
      [] {
        matmul(ones({2, 3}), ones({4, 5}));
      },
      {"matmul", "[2, 3]", "[4, 5]", "3 vs 4"}));
  EXPECT_TRUE(throws_error(
      [] {
        matmul(ones({2, 2, 3}), ones({3, 3, 4}));
      },
      {"matmul", "[2, 2, 3] f32 cpu", "[3, 3, 4] f32 cpu", "broadcast"}));
  EXPECT_TRUE(throws_error([] { matmul(scalar_tensor(1.0), ones({3})); },
                           {"matmul", "at least 1 dim", "[] f32 cpu"}));
}

TEST(Matmul, BadDtype) {
  EXPECT_TRUE(throws_error(
      [] {
        matmul(ones({2, 3}, {DType::i64}), ones({3, 2}, {DType::i64}));
      },
      {"matmul", "[2, 3] i64 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        matmul(ones({2, 3}), ones({3, 2}, {DType::f64}));
      },
      {"matmul", "dtype mismatch", "[2, 3] f32 cpu", "[3, 2] f64 cpu"}));
}

}  // namespace
}  // namespace rg
