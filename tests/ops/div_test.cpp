#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// Divisors in [0.5, 1.5) or (-1.5, -0.5]: away from 0, where 1/b explodes.
Tensor divisor(const Shape& shape, bool negative = false, uint64_t seed = 2) {
  return negative ? grad_input(shape, -1.5, -0.5, seed) : grad_input(shape, 0.5, 1.5, seed);
}

TEST(Div, GradcheckSameShapeAndBroadcastBothWays) {
  auto fn = [](const std::vector<Tensor>& in) { return div(in[0], in[1]); };
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3}), divisor({2, 3})}));
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3}), divisor({2, 3}, true)}));
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3, 2}), divisor({3, 1})}));        // b broadcast
  EXPECT_TRUE(gradcheck(fn, {grad_input({3}), divisor({2, 3})}));              // a broadcast
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 1, 3}), divisor({4, 1}, true)}));  // both
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

TEST(Div, GradcheckScalarForms) {
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return in[0] / 2.5; }, {grad_input({2, 3})}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return 2.5 / in[0]; }, {divisor({2, 3})}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return div(-1.0, in[0]); },
                        {divisor({4}, true)}));
}

TEST(Div, ByZeroFollowsIeee) {
  Tensor y = from_vector<float>({1, -1, 0}, {3}) / zeros({3});
  std::vector<float> v = y.to_vector<float>();
  EXPECT_EQ(v[0], INFINITY);
  EXPECT_EQ(v[1], -INFINITY);
  EXPECT_TRUE(std::isnan(v[2]));
}

TEST(Div, MatchesPyTorch) {
  Fixture f("div");
  for (std::string c : {"same", "bcast_b", "bcast_both"}) {
    SCOPED_TRACE(c);
    Tensor a = f[c + ".a"].set_requires_grad(true), b = f[c + ".b"].set_requires_grad(true);
    Tensor y = a / b;
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(a.grad(), f[c + ".ga"]));
    EXPECT_TRUE(all_close(b.grad(), f[c + ".gb"]));
  }
  for (std::string c : {"scalar", "rscalar"}) {
    SCOPED_TRACE(c);
    Tensor a = f[c + ".a"].set_requires_grad(true);
    Tensor y = c == "scalar" ? a / 1.7 : 2.0 / a;
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(a.grad(), f[c + ".ga"]));
  }
}

TEST(Div, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        div(ones({2, 3}), ones({3, 2}));
      },
      {"div", "[2, 3]", "[3, 2]", "broadcast"}));
  EXPECT_TRUE(throws_error([] { div(ones({2}, {DType::bf16}), ones({2}, {DType::f64})); },
                           {"div", "dtype mismatch", "[2] bf16 cpu", "[2] f64 cpu"}));
  EXPECT_TRUE(throws_error([] { div(1.0, ones({2}, {DType::i64})); }, {"div", "[2] i64 cpu"}));
}

}  // namespace
}  // namespace rg
