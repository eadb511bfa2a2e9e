#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Mul, GradcheckSameShapeAndBroadcastBothWays) {
  auto fn = [](const std::vector<Tensor>& in) { return mul(in[0], in[1]); };
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3}), grad_input({2, 3}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3, 2}), grad_input({3, 1}, -1, 1, 2)}));  // b bcast
  EXPECT_TRUE(gradcheck(fn, {grad_input({3}), grad_input({2, 3}, -1, 1, 2)}));        // a bcast
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 1, 3}), grad_input({4, 1}, -1, 1, 2)}));  // both
  // A non-contiguous operand, and the same tensor on both sides (x · x: gradient 2x).
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return in[0].transpose(0, 1) * in[1]; },
                        {grad_input({3, 2}), grad_input({2, 3}, -1, 1, 2)}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return in[0] * in[0]; }, {grad_input({5})}));
}

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

TEST(Mul, GradcheckScalarForms) {
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return in[0] * 2.5; }, {grad_input({2, 3})}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return -0.5 * in[0]; }, {grad_input({2, 3})}));
}

TEST(Mul, MatchesPyTorch) {
  Fixture f("mul");
  for (std::string c : {"same", "bcast_b", "bcast_both"}) {
    SCOPED_TRACE(c);
    Tensor a = f[c + ".a"].set_requires_grad(true), b = f[c + ".b"].set_requires_grad(true);
    Tensor y = a * b;
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(a.grad(), f[c + ".ga"]));
    EXPECT_TRUE(all_close(b.grad(), f[c + ".gb"]));
  }
  for (std::string c : {"scalar", "rscalar"}) {
    SCOPED_TRACE(c);
    Tensor a = f[c + ".a"].set_requires_grad(true);
    Tensor y = c == "scalar" ? a * 1.5 : -0.75 * a;
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(a.grad(), f[c + ".ga"]));
  }
  Tensor x = f["square.x"].set_requires_grad(true);
  Tensor y = x * x;
  EXPECT_TRUE(all_close(y, f["square.y"]));
  y.backward(f["square.gy"]);
  EXPECT_TRUE(all_close(x.grad(), f["square.gx"]));
}

TEST(Mul, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        mul(ones({2, 3}), ones({2}));
      },
      {"mul", "[2, 3]", "[2]", "broadcast"}));
  EXPECT_TRUE(throws_error([] { mul(ones({2}, {DType::f16}), ones({2})); },
                           {"mul", "dtype mismatch", "[2] f16 cpu", "[2] f32 cpu"}));
  EXPECT_TRUE(throws_error([] { mul(ones({2}, {DType::i64}), 2.0); }, {"mul", "[2] i64 cpu"}));
}

}  // namespace
}  // namespace rg
