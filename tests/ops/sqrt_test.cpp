#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Sqrt, Gradcheck) {
  auto fn = [](const std::vector<Tensor>& in) { return sqrt(in[0]); };
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3}, 0.2, 3)}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return sqrt(in[0].transpose(0, 1)); },
                        {grad_input({3, 2}, 0.2, 3, 3)}));
}

TEST(Sqrt, MatchesPyTorch) {
  Fixture f("sqrt");
  for (std::string c : {"positive", "wide", "domain"}) {
    SCOPED_TRACE(c);
    Tensor x = f[c + ".x"].set_requires_grad(true);
    Tensor y = sqrt(x);
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c + ".gx"]));
  }
}

TEST(Sqrt, NoDomainCheckLikePyTorch) {
  // sqrt(x < 0) = nan and so is its gradient; at 0 the gradient is inf.
  Tensor x = from_vector<double>({-4, 0, 4}, {3}, {DType::f64}).set_requires_grad(true);
  Tensor y = sqrt(x);
  std::vector<double> v = y.to_vector<double>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 0.0);
  EXPECT_EQ(v[2], 2.0);
  y.backward(ones({3}, {DType::f64}));
  std::vector<double> g = x.grad().to_vector<double>();
  EXPECT_TRUE(std::isnan(g[0]));
  EXPECT_EQ(g[1], INFINITY);
  EXPECT_EQ(g[2], 0.25);
}

TEST(Sqrt, BadInput) {
  EXPECT_TRUE(throws_error([] { sqrt(ones({2}, {DType::i64})); }, {"sqrt", "[2] i64 cpu"}));
  EXPECT_TRUE(throws_error([] { sqrt(ones({2, 2}, {DType::u8})); }, {"sqrt", "[2, 2] u8 cpu"}));
}

}  // namespace
}  // namespace rg
