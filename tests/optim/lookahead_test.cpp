#include "optim/lookahead.h"

#include <gtest/gtest.h>

#include <cmath>

#include "nn/layers.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using rg::testing::throws_error;

std::vector<double> values(const Tensor& t) {
  return t.to(DType::f64).contiguous().to_vector<double>();
}

// Values chosen so that every step is exact in binary floating point.
TEST(Lookahead, AveragesAndResetsTheTensorsInPlace) {
  Tensor w = from_vector<float>({1, 2}, {2}).set_requires_grad(true);
  Tensor stats = from_vector<double>({4}, {1});
  Lookahead lookahead({w, stats});
  // Training moves the tensors; the averages still hold their values at construction.
  copy_strided(w.detach(), from_vector<float>({3, 6}, {2}));
  copy_strided(stats, from_vector<double>({8}, {1}));
  lookahead.update(0.75);
  // a = 0.75·a + 0.25·t: (1, 2) -> (1.5, 3); 4 -> 5. The tensors become the averages.
  EXPECT_EQ(values(w), (std::vector<double>{1.5, 3}));
  EXPECT_EQ(values(stats), (std::vector<double>{5}));
  EXPECT_EQ(values(lookahead.averages()[0]), (std::vector<double>{1.5, 3}));
  EXPECT_TRUE(w.requires_grad());  // still the same leaf parameter

  copy_strided(w.detach(), from_vector<float>({5.5, 7}, {2}));
  lookahead.update(0.5);  // (1.5, 3) and (5.5, 7) -> (3.5, 5)
  EXPECT_EQ(values(w), (std::vector<double>{3.5, 5}));

  // decay 1 (airbench94's last call): the average is kept and the tensors reset to it.
  copy_strided(w.detach(), from_vector<float>({100, 100}, {2}));
  lookahead.update(1.0);
  EXPECT_EQ(values(w), (std::vector<double>{3.5, 5}));
  // decay 0: the average becomes the tensors.
  copy_strided(w.detach(), from_vector<float>({-1, 0.25}, {2}));
  lookahead.update(0.0);
  EXPECT_EQ(values(lookahead.averages()[0]), (std::vector<double>{-1, 0.25}));
}

TEST(Lookahead, DecayFollowsAirbench94) {
  // 0.95**5 * (torch.arange(T + 1) / T)**3 at T = 480.
  EXPECT_EQ(lookahead_decay(0, 480), 0.0);
  EXPECT_DOUBLE_EQ(lookahead_decay(240, 480), 0.7737809375 / 8);
  EXPECT_DOUBLE_EQ(lookahead_decay(480, 480), 0.7737809375);
  EXPECT_DOUBLE_EQ(lookahead_decay(120, 480), 0.7737809375 / 64);
}

// airbench94: update every 5 steps with the scheduled decay, and with decay 1 after the last.
TEST(Lookahead, Airbench94CallsItEveryFiveStepsAndAtTheEnd) {
  Tensor w = from_vector<double>({0}, {1});
  Lookahead lookahead({w});
  double average = 0;
  const int64_t total = 12;
  for (int64_t step = 1; step <= total; ++step) {
    const double value = static_cast<double>(step);  // the "training" sets w to the step
    copy_strided(w, from_vector<double>({value}, {1}));
    airbench94_lookahead(lookahead, step, total);
    if (step % 5 == 0) {
      const double d = lookahead_decay(step, total);
      average = average + (1 - d) * (value - average);
      // The scalar (1 − decay) is applied in f32 by ops' scalar multiply.
      EXPECT_NEAR(values(w)[0], average, 1e-6 * average) << step;
    } else if (step != total) {
      EXPECT_EQ(values(w)[0], value) << step;  // untouched between updates
    }
  }
  EXPECT_NEAR(values(w)[0], average, 1e-6 * average);  // step 12: the average of step 10
}

TEST(Lookahead, ModelStateIsParametersAndFloatingBuffers) {
  nn::BatchNorm2d norm(3);
  const std::vector<Tensor> state = model_state(norm);
  // weight, bias, running_mean, running_var; not num_batches_tracked (an integer).
  ASSERT_EQ(state.size(), 4u);
  EXPECT_TRUE(state[0].same_as(norm.weight_));
  EXPECT_TRUE(state[3].same_as(norm.running_var_));
}

TEST(Lookahead, BadArguments) {
  EXPECT_TRUE(throws_error([] { Lookahead({Tensor()}); }, {"Lookahead", "tensor 0"}));
  EXPECT_TRUE(throws_error(
      [] {
        Lookahead({zeros({2}), full({1}, 1, {DType::i64})});
      },
      {"Lookahead", "tensor 1", "floating"}));
  Lookahead lookahead({zeros({2})});
  EXPECT_TRUE(throws_error([&] { lookahead.update(1.5); }, {"decay", "[0, 1]"}));
  EXPECT_TRUE(throws_error([&] { lookahead.update(std::nan("")); }, {"decay"}));
  EXPECT_TRUE(throws_error([] { lookahead_decay(481, 480); }, {"lookahead_decay", "481"}));
}

}  // namespace
}  // namespace rg
