#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of cat are in its spec (ops/cat/cat_spec.cpp).

// An input that does not require grad, and the same tensor twice (gradients add up).
TEST(Cat, GradcheckWithAConstantAndARepeatedInput) {
  Tensor a = grad_input({2, 2}, -1, 1, 4);
  Tensor c = rand({2, 1}, {DType::f64});
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return cat({in[0], c, in[0]}, 1);
      },
      {a}));
}

TEST(Cat, IntegersNonContiguousAndEmptyPieces) {
  Tensor a = from_vector<int64_t>({1, 2, 3, 4}, {2, 2}, {DType::i64});
  Tensor y = cat({a, a.transpose(0, 1), empty({0, 2}, {DType::i64})}, 0);
  EXPECT_EQ(y.shape(), (Shape{4, 2}));
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 1, 3, 2, 4}));
}

}  // namespace
}  // namespace rg
