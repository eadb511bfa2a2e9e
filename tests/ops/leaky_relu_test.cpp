#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(LeakyRelu, GradcheckEverySlope) {
  // Inputs kept away from the kink at 0.
  Tensor x = from_vector<double>({-1.5, -0.3, 0.2, 0.9, 2.0, -0.7}, {2, 3}, {DType::f64});
  x.set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return leaky_relu(in[0]); }, {x}));
  for (double slope : {0.0, 0.2, -0.3, 1.5}) {
    SCOPED_TRACE(slope);
    EXPECT_TRUE(gradcheck(
        [slope](const std::vector<Tensor>& in) { return leaky_relu(in[0], slope); }, {x}));
  }
}

TEST(LeakyRelu, DefaultSlopeAndKink) {
  // negative_slope defaults to 0.01; at exactly 0 the output is 0 and the slope side is taken.
  Tensor x = from_vector<double>({-2, 0, 3}, {3}, {DType::f64}).set_requires_grad(true);
  Tensor y = leaky_relu(x);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{-0.02, 0, 3}));
  y.backward(ones({3}, {DType::f64}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0.01, 0.01, 1}));
}

TEST(LeakyRelu, MatchesPyTorch) {
  Fixture f("leaky_relu");
  const std::vector<std::pair<std::string, double>> cases = {
      {"default", 0.01}, {"s0_2", 0.2}, {"s0", 0.0}, {"sneg", -0.3}};
  for (const auto& [c, slope] : cases) {
    SCOPED_TRACE(c);
    Tensor x = f[c + ".x"].set_requires_grad(true);
    Tensor y = leaky_relu(x, slope);
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c + ".gx"]));
  }
}

TEST(LeakyRelu, BadInput) {
  EXPECT_TRUE(
      throws_error([] { leaky_relu(ones({2}, {DType::i64})); }, {"leaky_relu", "[2] i64 cpu"}));
}

}  // namespace
}  // namespace rg
