#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of div are in its spec (ops/div/div_spec.cpp).

// Divisors in [0.5, 1.5): away from 0, where 1/b explodes.
Tensor divisor(const Shape& shape) {
  return grad_input(shape, 0.5, 1.5, 2);
}

TEST(Div, OnlyTheSideThatRequiresGradGetsOne) {
  for (bool a_needs : {true, false}) {
    Tensor a = grad_input({2, 3}).set_requires_grad(a_needs);
    Tensor b = divisor({3}).set_requires_grad(!a_needs);
    EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return in[0] / in[1]; }, {a, b}));
    (a / b).backward(ones({2, 3}, {DType::f64}));
    EXPECT_EQ(a.grad().defined(), a_needs);
    EXPECT_EQ(b.grad().defined(), !a_needs);
  }
}

TEST(Div, ByZeroFollowsIeee) {
  Tensor y = from_vector<float>({1, -1, 0}, {3}) / zeros({3});
  std::vector<float> v = y.to_vector<float>();
  EXPECT_EQ(v[0], INFINITY);
  EXPECT_EQ(v[1], -INFINITY);
  EXPECT_TRUE(std::isnan(v[2]));
}

}  // namespace
}  // namespace rg
