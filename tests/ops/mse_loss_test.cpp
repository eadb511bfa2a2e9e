#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(MseLoss, GradcheckEveryReduction) {
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
    SCOPED_TRACE(reduction_name(r));
    EXPECT_TRUE(gradcheck([=](const std::vector<Tensor>& in) { return mse_loss(in[0], in[1], r); },
                          {grad_input({2, 3}), grad_input({2, 3}, -1, 1, 2)}));
  }
}

TEST(MseLoss, MatchesPyTorch) {
  Fixture f("mse_loss");
  for (auto [name, r] : std::vector<std::pair<std::string, Reduction>>{
           {"none", Reduction::none}, {"mean", Reduction::mean}, {"sum", Reduction::sum}}) {
    SCOPED_TRACE(name);
    Tensor x = f[name + ".x"].set_requires_grad(true), t = f[name + ".t"].set_requires_grad(true);
    Tensor y = mse_loss(x, t, r);
    EXPECT_TRUE(all_close(y, f[name + ".y"]));
    y.backward(f[name + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[name + ".gx"]));
    EXPECT_TRUE(all_close(t.grad(), f[name + ".gt"]));
  }
}

TEST(MseLoss, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        mse_loss(zeros({2, 3}), zeros({3}));
      },
      {"mse_loss", "[3] f32 cpu", "[2, 3] f32 cpu"}));
  EXPECT_TRUE(throws_error([] { mse_loss(zeros({2}), zeros({2}, {DType::f64})); },
                           {"mse_loss", "dtype mismatch"}));
  EXPECT_TRUE(throws_error([] { mse_loss(zeros({2}, {DType::i64}), zeros({2}, {DType::i64})); },
                           {"mse_loss", "[2] i64 cpu"}));
}

}  // namespace
}  // namespace rg
