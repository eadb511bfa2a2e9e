#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Sigmoid, Gradcheck) {
  auto fn = [](const std::vector<Tensor>& in) { return sigmoid(in[0]); };
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3}, -3, 3)}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return sigmoid(in[0].transpose(0, 1)); },
                {grad_input({3, 2}, -3, 3, 3)}));
}

TEST(Sigmoid, MatchesPyTorch) {
  Fixture f("sigmoid");
  for (std::string c : {"small", "wide"}) {
    SCOPED_TRACE(c);
    Tensor x = f[c + ".x"].set_requires_grad(true);
    Tensor y = sigmoid(x);
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c + ".gx"]));
  }
}

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

TEST(Sigmoid, BadInput) {
  EXPECT_TRUE(throws_error([] { sigmoid(ones({2}, {DType::i64})); }, {"sigmoid", "[2] i64 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        sigmoid(ones({2, 2}, {DType::u8}));
      },
      {"sigmoid", "[2, 2] u8 cpu"}));
}

}  // namespace
}  // namespace rg
