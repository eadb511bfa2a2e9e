#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of sub are in its spec (ops/sub/sub_spec.cpp).
TEST(Sub, OnlyTheSideThatRequiresGradGetsOne) {
  auto fn = [](const std::vector<Tensor>& in) { return sub(in[0], in[1]); };
  Tensor a = grad_input({2, 3}), b = grad_input({3}, -1, 1, 2).set_requires_grad(false);
  EXPECT_TRUE(gradcheck(fn, {a, b}));
  (a - b).backward(ones({2, 3}, {DType::f64}));
  EXPECT_FALSE(b.grad().defined());
}

TEST(Sub, OperatorsMatchFunctions) {
  Tensor a = from_vector<float>({1, 2, 3}, {3}), b = from_vector<float>({0.5f, 4, -1}, {3});
  EXPECT_EQ((a - b).to_vector<float>(), (std::vector<float>{0.5f, -2, 4}));
  EXPECT_EQ((a - 1.0).to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ((10.0 - a).to_vector<float>(), (std::vector<float>{9, 8, 7}));
  EXPECT_EQ(sub(10.0, a).to_vector<float>(), (std::vector<float>{9, 8, 7}));
}

}  // namespace
}  // namespace rg
