// nn/dice_loss.h: gradcheck in f64, parity with PyTorch (tests/fixtures/dice_loss.safetensors,
// tools/fixtures/dice_loss.py), one_hot, and bad inputs.

#include "nn/dice_loss.h"

#include <gtest/gtest.h>

#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg::nn {
namespace {

using namespace rg::testing;

TEST(DiceLoss, OneHotOfClassIndices) {
  const Tensor t = from_vector<int64_t>({2, 0, 1, 2}, {2, 2}, {DType::i64});
  const Tensor h = one_hot(t, 3, DType::f32);  // (2, 3, 2)
  ASSERT_EQ(h.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1}));
}

TEST(DiceLoss, GradcheckSoftDice) {
  const Tensor t2 = from_vector<int64_t>({0, 2, 1, 1, 0, 2}, {2, 3}, {DType::i64});
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return soft_dice_loss(in[0], t2); },
                        {grad_input({2, 3, 3})}));
  const Tensor t3 = from_vector<int64_t>({1, 0, 0, 1, 1, 1, 0, 0}, {1, 2, 2, 2}, {DType::i64});
  EXPECT_TRUE(
      gradcheck([&](const std::vector<Tensor>& in) { return soft_dice_loss(in[0], t3, 1.0); },
                {grad_input({1, 2, 2, 2, 2})}));
}

TEST(DiceLoss, GradcheckBceDice) {
  const Tensor t = from_vector<double>({1, 0, 0.3, 1, 0, 1, 0.5, 0}, {2, 1, 2, 2}, {DType::f64});
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return bce_dice_loss(in[0], t); },
                        {grad_input({2, 1, 2, 2})}));
}

TEST(DiceLoss, MatchesPyTorch) {
  Fixture f("dice_loss");
  for (const char* name :
       {"soft_2d", "soft_3d", "soft_rows", "soft_absent", "bce_2d", "bce_3d", "bce_soft"}) {
    SCOPED_TRACE(name);
    const std::string n = name;
    Tensor x = f[n + ".x"].set_requires_grad(true);
    const bool soft = n.rfind("soft", 0) == 0;
    Tensor y = soft ? soft_dice_loss(x, f[n + ".t"]) : bce_dice_loss(x, f[n + ".t"]);
    EXPECT_TRUE(all_close(y, f[n + ".y"], 1e-12, 1e-12));
    y.backward();
    EXPECT_TRUE(all_close(x.grad(), f[n + ".gx"], 1e-12, 1e-12));
  }
}

TEST(DiceLoss, PerfectPredictionGivesNearZeroLoss) {
  // Logits of ±30 make softmax / sigmoid 0 or 1 to within 1e-13: the Dice terms are 1.
  const Tensor t = from_vector<int64_t>({0, 1, 1, 0}, {1, 2, 2}, {DType::i64});
  const Tensor logits = mul(sub(one_hot(t, 2, DType::f64), 0.5), 60.0);
  EXPECT_NEAR(soft_dice_loss(logits, t).item(), 0.0, 1e-9);
  const Tensor mask = from_vector<double>({0, 1, 1, 0}, {1, 1, 2, 2}, {DType::f64});
  // BCE at |logit| 30 is about 1e-13; Dice is 1.
  EXPECT_NEAR(bce_dice_loss(mul(sub(mask, 0.5), 60.0), mask).item(), 0.0, 1e-9);
}

TEST(DiceLoss, CriterionObjectsCallTheFunctions) {
  const Tensor x = randn({2, 3, 4}, {DType::f64});
  const Tensor t = from_vector<int64_t>({0, 1, 2, 1, 0, 0, 2, 2}, {2, 4}, {DType::i64});
  EXPECT_EQ(SoftDiceLoss(0.5)(x, t).item(), soft_dice_loss(x, t, 0.5).item());
  const Tensor m = rand({2, 3, 4}, {DType::f64});
  EXPECT_EQ(BCEDiceLoss()(x, m).item(), bce_dice_loss(x, m).item());
}

TEST(DiceLoss, BadInput) {
  const Tensor x = randn({2, 3, 4, 4});
  const Tensor t = zeros({2, 4, 4}, {DType::i64});
  EXPECT_TRUE(throws_error(
      [&] {
        soft_dice_loss(x, zeros({2, 4, 4}));
      },
      {"soft_dice_loss", "i64", "[2, 4, 4] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        soft_dice_loss(x, zeros({2, 4, 5}, {DType::i64}));
      },
      {"soft_dice_loss", "[2, 3, 4, 4] f32 cpu", "[2, 4, 5] i64 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        soft_dice_loss(zeros({2, 3, 4, 4}, {DType::i64}), t);
      },
      {"soft_dice_loss", "floating logits", "[2, 3, 4, 4] i64"}));
  EXPECT_TRUE(throws_error([&] { soft_dice_loss(x, add(t.to(DType::f32), 3.0).to(DType::i64)); },
                           {"soft_dice_loss", "outside [0, 3)"}));
  Tensor negative = zeros({2, 4, 4}, {DType::i64});
  EXPECT_TRUE(
      throws_error([&] { soft_dice_loss(x, sub(negative.to(DType::f32), 1.0).to(DType::i64)); },
                   {"soft_dice_loss", "outside [0, 3)"}));
  EXPECT_TRUE(throws_error([&] { soft_dice_loss(x, t, -1); }, {"smooth", "-1"}));

  const Tensor b = randn({2, 1, 4, 4});
  EXPECT_TRUE(throws_error(
      [&] {
        bce_dice_loss(b, zeros({2, 1, 4, 4}, {DType::f64}));
      },
      {"bce_dice_loss", "[2, 1, 4, 4] f32 cpu", "[2, 1, 4, 4] f64 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        bce_dice_loss(b, zeros({2, 1, 4, 5}));
      },
      {"bce_dice_loss", "[2, 1, 4, 5]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        bce_dice_loss(b, full({2, 1, 4, 4}, 2.0));
      },
      {"bce_dice_loss", "outside [0, 1]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        bce_dice_loss(b, full({2, 1, 4, 4}, -0.5));
      },
      {"bce_dice_loss", "outside [0, 1]"}));
  EXPECT_TRUE(throws_error([&] { one_hot(zeros({2}), 3, DType::f32); }, {"one_hot", "i64"}));
}

}  // namespace
}  // namespace rg::nn
