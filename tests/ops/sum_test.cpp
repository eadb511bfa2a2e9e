#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of sum are in its spec (ops/sum/sum_spec.cpp).
// Large enough for several threads on every path (full, (outer, R, inner), strided groups),
// against a plain double loop.
TEST(Sum, LargeMatchesPlainLoop) {
  manual_seed(1);  // fixed data whatever ran before
  const int64_t a = 64, b = 37, c = 129;
  Tensor x = rand({a, b, c});
  const std::vector<float> v = x.to_vector<float>();
  auto at = [&](int64_t i, int64_t j, int64_t k) { return double(v[(i * b + j) * c + k]); };
  std::vector<double> s1(a * c, 0), s02(b, 0);
  double all = 0;
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < c; ++k) {
        s1[i * c + k] += at(i, j, k);
        s02[j] += at(i, j, k);
        all += at(i, j, k);
      }
  EXPECT_NEAR(sum(x).item(), all, 1e-6 * all);
  EXPECT_TRUE(all_close(sum(x, {1}), from_vector(s1, {a, c})));
  EXPECT_TRUE(all_close(sum(x, {0, 2}), from_vector(s02, {b})));
  std::vector<double> s0(b * c, 0);
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b * c; ++j) s0[j] += v[i * b * c + j];
  EXPECT_TRUE(all_close(sum(x, {0}), from_vector(s0, {b, c})));
}

TEST(Sum, AccumulatesInDouble) {
  // 4M copies of 0.1f: a float accumulator stalls far below the true sum once the running
  // total dwarfs each term; the double accumulator is within one float ulp (0.03).
  const double exact = 4'000'000 * double(0.1f);
  EXPECT_NEAR(sum(full({4'000'000}, 0.1)).item(), exact, 0.04);
  EXPECT_NEAR(sum(full({2000, 2000}, 0.1), {1}).to_vector<double>()[7], 2000 * double(0.1f), 1e-3);
}

TEST(Sum, EdgeCasesAndHalfTypes) {
  manual_seed(2);  // fixed data whatever ran before
  EXPECT_EQ(sum(scalar_tensor(2.5)).item(), 2.5);
  EXPECT_EQ(sum(scalar_tensor(2.5), {0}).shape(), Shape{});
  EXPECT_EQ(sum(zeros({0, 3})).item(), 0.0);
  EXPECT_TRUE(all_close(sum(zeros({0, 3}), {0}), zeros({3})));
  Tensor x = rand({4, 5});
  EXPECT_TRUE(all_close(sum(x.to(DType::bf16), {1}).to(DType::f32), sum(x, {1}), 0.05, 1e-2));
  EXPECT_TRUE(all_close(sum(x.to(DType::f16)).to(DType::f32), sum(x), 0.02, 1e-3));
  EXPECT_EQ(sum(x.to(DType::f64), {0}).dtype(), DType::f64);
}

}  // namespace
}  // namespace rg
