#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of pow are in its spec (ops/pow/pow_spec.cpp).
TEST(Pow, OnlyTheSideThatRequiresGradGetsOne) {
  // Positive bases: the exponent gradient is y·ln x.
  auto fn = [](const std::vector<Tensor>& in) { return pow(in[0], in[1]); };
  for (bool x_needs : {true, false}) {
    Tensor x = grad_input({2, 3}, 0.3, 2).set_requires_grad(x_needs);
    Tensor e = grad_input({3}, -1, 1, 2).set_requires_grad(!x_needs);
    EXPECT_TRUE(gradcheck(fn, {x, e}));
    pow(x, e).backward(ones({2, 3}, {DType::f64}));
    EXPECT_EQ(x.grad().defined(), x_needs);
    EXPECT_EQ(e.grad().defined(), !x_needs);
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

}  // namespace
}  // namespace rg
