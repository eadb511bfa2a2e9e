#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of the loss are in its spec
// (ops/binary_cross_entropy_with_logits/binary_cross_entropy_with_logits_spec.cpp).

TEST(BinaryCrossEntropyWithLogits, StableForHugeLogits) {
  Tensor x = from_vector<float>({200, -200, 200, -200}, {4}).set_requires_grad(true);
  Tensor y = binary_cross_entropy_with_logits(x, from_vector<float>({1, 0, 0, 1}, {4}), {}, {},
                                              Reduction::none);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 200, 200}));
  y.backward(ones({4}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0, 0, 1, -1}));
}

}  // namespace
}  // namespace rg
