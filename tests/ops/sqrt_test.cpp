#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of sqrt are in its spec (ops/sqrt/sqrt_spec.cpp).
TEST(Sqrt, NoDomainCheckLikePyTorch) {
  // sqrt(x < 0) = nan and so is its gradient; at 0 the gradient is inf.
  Tensor x = from_vector<double>({-4, 0, 4}, {3}, {DType::f64}).set_requires_grad(true);
  Tensor y = sqrt(x);
  std::vector<double> v = y.to_vector<double>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 0.0);
  EXPECT_EQ(v[2], 2.0);
  y.backward(ones({3}, {DType::f64}));
  std::vector<double> g = x.grad().to_vector<double>();
  EXPECT_TRUE(std::isnan(g[0]));
  EXPECT_EQ(g[1], INFINITY);
  EXPECT_EQ(g[2], 0.25);
}

}  // namespace
}  // namespace rg
