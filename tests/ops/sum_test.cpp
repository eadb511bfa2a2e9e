#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Sum, GradcheckAllDimsAndKeepdim) {
  auto check = [](const Shape& shape, std::vector<int64_t> dims, KeepDim keep) {
    return gradcheck([&](const std::vector<Tensor>& in) { return sum(in[0], dims, keep); },
                     {grad_input(shape)});
  };
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return sum(in[0]); }, {grad_input({2, 3, 2})}));
  EXPECT_TRUE(check({2, 3, 2}, {1}, KeepDim::no));
  EXPECT_TRUE(check({2, 3, 2}, {1}, KeepDim::yes));
  EXPECT_TRUE(check({2, 3, 2}, {0, 2}, KeepDim::yes));
  EXPECT_TRUE(check({2, 3, 2}, {-1}, KeepDim::no));
  EXPECT_TRUE(check({2, 2, 3, 2}, {1, -1}, KeepDim::no));
  EXPECT_TRUE(check({2, 2, 3, 2}, {0, 2, 3}, KeepDim::yes));
  EXPECT_TRUE(check({3, 2}, {0}, KeepDim::no));
  EXPECT_TRUE(check({3, 2}, {}, KeepDim::yes));  // empty list: every dim
  // Non-contiguous input.
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return sum(in[0].transpose(0, 1), {1}); },
                {grad_input({3, 2})}));
}

TEST(Sum, MatchesPyTorch) {
  Fixture f("sum");
  struct Case {
    std::string name;
    std::vector<int64_t> dims;
    bool all;
    KeepDim keep;
  };
  const std::vector<Case> cases = {
      {"all", {}, true, KeepDim::no},        {"d1", {1}, false, KeepDim::no},
      {"d02k", {0, 2}, false, KeepDim::yes}, {"dneg", {-1}, false, KeepDim::no},
      {"d13", {1, 3}, false, KeepDim::no},   {"d023k", {0, -2, -1}, false, KeepDim::yes},
      {"d0", {0}, false, KeepDim::no}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = f[c.name + ".x"].set_requires_grad(true);
    Tensor y = c.all ? sum(x) : sum(x, c.dims, c.keep);
    EXPECT_TRUE(all_close(y, f[c.name + ".y"]));
    y.backward(f[c.name + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c.name + ".gx"]));
  }
  Tensor x = f["t.x"].set_requires_grad(true);
  Tensor y = sum(x.transpose(0, 1), {1});
  EXPECT_TRUE(all_close(y, f["t.y"]));
  y.backward(f["t.gy"]);
  EXPECT_TRUE(all_close(x.grad(), f["t.gx"]));
}

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

TEST(Sum, BadInput) {
  EXPECT_TRUE(throws_error([] { sum(ones({2, 3}), {2}); }, {"sum", "dim 2", "out of range"}));
  EXPECT_TRUE(throws_error([] { sum(ones({2, 3}), {-3}); }, {"sum", "dim -3", "out of range"}));
  EXPECT_TRUE(throws_error(
      [] {
        sum(ones({2, 3}), {1, -1});
      },
      {"sum", "more than once", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { sum(ones({2}, {DType::i64})); }, {"sum", "[2] i64 cpu"}));
}

}  // namespace
}  // namespace rg
