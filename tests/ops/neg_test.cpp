#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Neg, Gradcheck) {
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return neg(in[0]); }, {grad_input({2, 3})}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return -in[0].transpose(0, 1); },
                        {grad_input({2, 3})}));
}

TEST(Neg, MatchesPyTorch) {
  Fixture f("neg");
  Tensor x = f["x"].set_requires_grad(true);
  Tensor y = -x;
  EXPECT_TRUE(all_close(y, f["y"]));
  y.backward(f["gy"]);
  EXPECT_TRUE(all_close(x.grad(), f["gx"]));
  // Non-contiguous input.
  Tensor xt = f["t.x"].set_requires_grad(true);
  Tensor yt = neg(xt.transpose(0, 1));
  EXPECT_TRUE(all_close(yt, f["t.y"]));
  yt.backward(f["t.gy"]);
  EXPECT_TRUE(all_close(xt.grad(), f["t.gx"]));
}

TEST(Neg, BadInput) {
  EXPECT_TRUE(throws_error([] { neg(ones({2}, {DType::i64})); }, {"neg", "[2] i64 cpu"}));
  EXPECT_TRUE(throws_error([] { -ones({3, 1}, {DType::u8}); }, {"neg", "[3, 1] u8 cpu"}));
}

}  // namespace
}  // namespace rg
