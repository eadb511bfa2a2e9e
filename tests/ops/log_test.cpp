#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of log are in its spec (ops/log/log_spec.cpp).
TEST(Log, NoDomainCheckLikePyTorch) {
  // log(0) = -inf, log(x < 0) = nan; the gradient gy / x stays finite for x < 0.
  Tensor x = from_vector<double>({-2, 0, 1}, {3}, {DType::f64}).set_requires_grad(true);
  Tensor y = log(x);
  std::vector<double> v = y.to_vector<double>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], -INFINITY);
  EXPECT_EQ(v[2], 0.0);
  y.backward(ones({3}, {DType::f64}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{-0.5, INFINITY, 1}));
}

}  // namespace
}  // namespace rg
