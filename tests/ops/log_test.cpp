#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Log, Gradcheck) {
  auto fn = [](const std::vector<Tensor>& in) { return log(in[0]); };
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3}, 0.2, 3)}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return log(in[0].transpose(0, 1)); },
                        {grad_input({3, 2}, 0.2, 3, 3)}));
}

TEST(Log, MatchesPyTorch) {
  Fixture f("log");
  for (std::string c : {"positive", "wide", "domain"}) {
    SCOPED_TRACE(c);
    Tensor x = f[c + ".x"].set_requires_grad(true);
    Tensor y = log(x);
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c + ".gx"]));
  }
}

TEST(Log, NoDomainCheckLikePyTorch) {
  // log(0) = -inf, log(x < 0) = nan; the gradient gy / x stays finite for x < 0.
  Tensor x = from_vector<double>({-2, 0, 1}, {3}, {DType::f64}).set_requires_grad(true);
  Tensor y = log(x);
  std::vector<double> v = y.to_vector<double>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], -INFINITY);
  EXPECT_EQ(v[2], 0.0);
  y.backward(ones({3}, {DType::f64}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{-0.5, INFINITY, 1}));
}

TEST(Log, BadInput) {
  EXPECT_TRUE(throws_error([] { log(ones({2}, {DType::i64})); }, {"log", "[2] i64 cpu"}));
  EXPECT_TRUE(throws_error([] { log(ones({2, 2}, {DType::u8})); }, {"log", "[2, 2] u8 cpu"}));
}

}  // namespace
}  // namespace rg
