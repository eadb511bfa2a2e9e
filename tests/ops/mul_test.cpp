#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of mul are in its spec (ops/mul/mul_spec.cpp).
TEST(Mul, OnlyTheSideThatRequiresGradGetsOne) {
  for (bool a_needs : {true, false}) {
    Tensor a = grad_input({2, 3}).set_requires_grad(a_needs);
    Tensor b = grad_input({3}, -1, 1, 2).set_requires_grad(!a_needs);
    EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return in[0] * in[1]; }, {a, b}));
    (a * b).backward(ones({2, 3}, {DType::f64}));
    EXPECT_EQ(a.grad().defined(), a_needs);
    EXPECT_EQ(b.grad().defined(), !a_needs);
  }
}

}  // namespace
}  // namespace rg
