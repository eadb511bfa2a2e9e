#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Pow, GradcheckScalarExponents) {
  // Integer exponents take bases of any sign; the others positive bases (x^2.7 of a negative
  // base is nan).
  for (double e : {2.0, 3.0, 1.0, -2.0, 0.0}) {
    SCOPED_TRACE(e);
    EXPECT_TRUE(gradcheck([e](const std::vector<Tensor>& in) { return pow(in[0], e); },
                          {grad_input({2, 3}, 0.3, 1.5)}));
    EXPECT_TRUE(gradcheck([e](const std::vector<Tensor>& in) { return pow(in[0], e); },
                          {grad_input({2, 3}, -1.5, -0.3)}));
  }
  for (double e : {0.5, -1.0, 2.7, -1.5, 0.3}) {
    SCOPED_TRACE(e);
    EXPECT_TRUE(gradcheck([e](const std::vector<Tensor>& in) { return pow(in[0], e); },
                          {grad_input({2, 3}, 0.3, 2)}));
  }
}

TEST(Pow, GradcheckTensorExponentBothGradsAndBroadcast) {
  // Positive bases: the exponent gradient is y·ln x.
  auto fn = [](const std::vector<Tensor>& in) { return pow(in[0], in[1]); };
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3}, 0.3, 2), grad_input({2, 3}, -1.5, 1.5, 2)}));
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3, 2}, 0.3, 2), grad_input({3, 1}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(fn, {grad_input({3}, 0.3, 2), grad_input({2, 3}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 1, 3}, 0.3, 2), grad_input({4, 1}, -1, 1, 2)}));
  // Only one side requires grad.
  for (bool x_needs : {true, false}) {
    Tensor x = grad_input({2, 3}, 0.3, 2).set_requires_grad(x_needs);
    Tensor e = grad_input({3}, -1, 1, 2).set_requires_grad(!x_needs);
    EXPECT_TRUE(gradcheck(fn, {x, e}));
    pow(x, e).backward(ones({2, 3}, {DType::f64}));
    EXPECT_EQ(x.grad().defined(), x_needs);
    EXPECT_EQ(e.grad().defined(), !x_needs);
  }
}

TEST(Pow, GradcheckScalarBase) {
  for (double base : {2.0, 0.5, 3.7}) {
    SCOPED_TRACE(base);
    EXPECT_TRUE(gradcheck([base](const std::vector<Tensor>& in) { return pow(base, in[0]); },
                          {grad_input({2, 3}, -2, 2)}));
  }
}

TEST(Pow, ZeroExponentAndZeroBaseConventions) {
  // e = 0: gradient exactly 0 for every base, even 0 (no 0·inf = nan).
  Tensor x = from_vector<double>({0, -2, 3}, {3}, {DType::f64}).set_requires_grad(true);
  Tensor y = pow(x, 0.0);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{1, 1, 1}));
  y.backward(ones({3}, {DType::f64}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 0}));
  // Base 0, tensor exponent: exponent gradient 0 for e >= 0, -inf for e < 0 (PyTorch).
  Tensor b = zeros({4}, {DType::f64});
  Tensor e = from_vector<double>({2, 0, 0.5, -1}, {4}, {DType::f64}).set_requires_grad(true);
  pow(b, e).backward(ones({4}, {DType::f64}));
  EXPECT_EQ(e.grad().to_vector<double>(), (std::vector<double>{0, 0, 0, -INFINITY}));
  Tensor e2 = from_vector<double>({2, 0, 0.5, -1}, {4}, {DType::f64}).set_requires_grad(true);
  pow(0.0, e2).backward(ones({4}, {DType::f64}));
  EXPECT_EQ(e2.grad().to_vector<double>(), (std::vector<double>{0, 0, 0, -INFINITY}));
  // Negative base: the exponent gradient is nan (ln of a negative), documented.
  Tensor e3 = from_vector<double>({2}, {1}, {DType::f64}).set_requires_grad(true);
  pow(full({1}, -2.0, {DType::f64}), e3).backward(ones({1}, {DType::f64}));
  EXPECT_TRUE(std::isnan(e3.grad().item()));
}

TEST(Pow, MatchesPyTorch) {
  Fixture f("pow");
  const std::vector<std::pair<std::string, double>> scalar_cases = {
      {"e2", 2}, {"e3", 3},     {"e0_5", 0.5},   {"em1", -1},
      {"e1", 1}, {"e2_7", 2.7}, {"em1_5", -1.5}, {"e0", 0}};
  for (const auto& [c, e] : scalar_cases) {
    SCOPED_TRACE(c);
    Tensor x = f[c + ".x"].set_requires_grad(true);
    Tensor y = pow(x, e);
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c + ".gx"]));
  }
  for (std::string c : {"tt", "tt_both", "zero_base"}) {
    SCOPED_TRACE(c);
    Tensor x = f[c + ".x"].set_requires_grad(true), e = f[c + ".e"].set_requires_grad(true);
    Tensor y = pow(x, e);
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c + ".gx"]));
    EXPECT_TRUE(all_close(e.grad(), f[c + ".ge"]));
  }
  for (auto [c, base] : std::vector<std::pair<std::string, double>>{{"rs", 2.0}, {"rs0", 0.0}}) {
    SCOPED_TRACE(c);
    Tensor e = f[c + ".e"].set_requires_grad(true);
    Tensor y = pow(base, e);
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(e.grad(), f[c + ".ge"]));
  }
}

TEST(Pow, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        pow(ones({2, 3}), ones({2}));
      },
      {"pow", "[2, 3]", "[2]", "broadcast"}));
  EXPECT_TRUE(throws_error([] { pow(ones({2}), ones({2}, {DType::f64})); },
                           {"pow", "dtype mismatch", "[2] f32 cpu", "[2] f64 cpu"}));
  EXPECT_TRUE(throws_error([] { pow(ones({2}, {DType::i64}), 2.0); }, {"pow", "[2] i64 cpu"}));
  EXPECT_TRUE(throws_error([] { pow(2.0, ones({2}, {DType::i64})); }, {"pow", "[2] i64 cpu"}));
}

}  // namespace
}  // namespace rg
