#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of leaky_relu are in its spec
// (ops/leaky_relu/leaky_relu_spec.cpp).
TEST(LeakyRelu, DefaultSlopeAndKink) {
  // negative_slope defaults to 0.01; at exactly 0 the output is 0 and the slope side is taken.
  Tensor x = from_vector<double>({-2, 0, 3}, {3}, {DType::f64}).set_requires_grad(true);
  Tensor y = leaky_relu(x);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{-0.02, 0, 3}));
  y.backward(ones({3}, {DType::f64}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0.01, 0.01, 1}));
}

}  // namespace
}  // namespace rg
