#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Exp, Gradcheck) {
  auto fn = [](const std::vector<Tensor>& in) { return exp(in[0]); };
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3}, -2, 2)}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return exp(in[0].transpose(0, 1)); },
                        {grad_input({3, 2}, -2, 2, 3)}));
}

TEST(Exp, MatchesPyTorch) {
  Fixture f("exp");
  for (std::string c : {"small", "wide", "extreme"}) {
    SCOPED_TRACE(c);
    Tensor x = f[c + ".x"].set_requires_grad(true);
    Tensor y = exp(x);
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c + ".gx"]));
  }
}

TEST(Exp, BadInput) {
  EXPECT_TRUE(throws_error([] { exp(ones({2}, {DType::i64})); }, {"exp", "[2] i64 cpu"}));
  EXPECT_TRUE(throws_error([] { exp(ones({2, 2}, {DType::u8})); }, {"exp", "[2, 2] u8 cpu"}));
}

}  // namespace
}  // namespace rg
