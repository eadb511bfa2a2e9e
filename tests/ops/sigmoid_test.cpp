#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of sigmoid are in its spec
// (ops/sigmoid/sigmoid_spec.cpp).
TEST(Sigmoid, ExtremeInputsStayFiniteAndAccurate) {
  // Neither branch overflows; far in the left tail the result keeps its relative precision.
  Tensor y = sigmoid(from_vector<double>({-800, -50, 0, 50, 800}, {5}, {DType::f64}));
  std::vector<double> v = y.to_vector<double>();
  EXPECT_EQ(v[0], 0.0);
  EXPECT_NEAR(v[1] / std::exp(-50.0), 1.0, 1e-12);
  EXPECT_EQ(v[2], 0.5);
  EXPECT_EQ(v[3], 1.0);
  EXPECT_EQ(v[4], 1.0);
}

}  // namespace
}  // namespace rg
