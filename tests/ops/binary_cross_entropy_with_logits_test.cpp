#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// Input and target both checked (the target is differentiable); weights are constants.
TEST(BinaryCrossEntropyWithLogits, GradcheckEveryOption) {
  const Tensor w = from_vector<double>({0.5, 1.5, 2.0}, {3, 1}, {DType::f64});
  const Tensor pw = from_vector<double>({0.3, 2.5}, {2}, {DType::f64});
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
    for (int weights = 0; weights < 4; ++weights) {
      SCOPED_TRACE(::testing::Message() << reduction_name(r) << " weights " << weights);
      const Tensor wt = weights & 1 ? w : Tensor(), pwt = weights & 2 ? pw : Tensor();
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Tensor>& in) {
            return binary_cross_entropy_with_logits(in[0], in[1], wt, pwt, r);
          },
          {grad_input({2, 3, 2}, -3, 3), grad_input({2, 3, 2}, 0, 1, 2)}));
    }
  }
}

TEST(BinaryCrossEntropyWithLogits, MatchesPyTorch) {
  Fixture f("binary_cross_entropy_with_logits");
  for (auto [name, r] :
       std::vector<std::pair<std::string, Reduction>>{{"mean", Reduction::mean},
                                                      {"sum", Reduction::sum},
                                                      {"none", Reduction::none},
                                                      {"w_mean", Reduction::mean},
                                                      {"pw_mean", Reduction::mean},
                                                      {"wpw_sum", Reduction::sum},
                                                      {"wpw_none", Reduction::none},
                                                      {"big", Reduction::mean}}) {
    SCOPED_TRACE(name);
    Tensor x = f[name + ".x"].set_requires_grad(true), t = f[name + ".t"].set_requires_grad(true);
    const Tensor w = f.has(name + ".w") ? f[name + ".w"] : Tensor();
    const Tensor pw = f.has(name + ".pw") ? f[name + ".pw"] : Tensor();
    Tensor y = binary_cross_entropy_with_logits(x, t, w, pw, r);
    EXPECT_TRUE(all_close(y, f[name + ".y"]));
    y.backward(f[name + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[name + ".gx"]));
    EXPECT_TRUE(all_close(t.grad(), f[name + ".gt"]));
  }
}

TEST(BinaryCrossEntropyWithLogits, StableForHugeLogits) {
  Tensor x = from_vector<float>({200, -200, 200, -200}, {4}).set_requires_grad(true);
  Tensor y = binary_cross_entropy_with_logits(x, from_vector<float>({1, 0, 0, 1}, {4}), {}, {},
                                              Reduction::none);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 200, 200}));
  y.backward(ones({4}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0, 0, 1, -1}));
}

TEST(BinaryCrossEntropyWithLogits, BadInput) {
  const Tensor x = zeros({2, 3});
  EXPECT_TRUE(throws_error([&] { binary_cross_entropy_with_logits(x, zeros({3})); },
                           {"binary_cross_entropy_with_logits", "[3] f32 cpu", "[2, 3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        binary_cross_entropy_with_logits(x, zeros({2, 3}, {DType::i64}));
      },
      {"binary_cross_entropy_with_logits", "[2, 3] i64 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        binary_cross_entropy_with_logits(x, zeros({2, 3}, {DType::f64}));
      },
      {"binary_cross_entropy_with_logits", "dtype mismatch"}));
  EXPECT_TRUE(throws_error(
      [&] {
        binary_cross_entropy_with_logits(x, zeros({2, 3}), ones({2}));
      },
      {"binary_cross_entropy_with_logits", "weight", "[2] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        binary_cross_entropy_with_logits(x, zeros({2, 3}), {}, ones({4, 2, 3}));
      },
      {"binary_cross_entropy_with_logits", "pos_weight [4, 2, 3] f32 cpu cannot be broadcast"}));
}

}  // namespace
}  // namespace rg
