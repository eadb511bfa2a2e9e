#include "optim/lookahead.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/autograd.h"
#include "nn/layers.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using rg::testing::all_close;
using rg::testing::throws_error;

std::vector<double> values(const Tensor& t) {
  return t.to(DType::f64).contiguous().to_vector<double>();
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (double v : values(t)) m = std::max(m, std::abs(v));
  return m;
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

// The per-tensor ops the update ran as before it was fused (sub, scalar mul, add, two copies).
void update_by_ops(std::vector<Tensor>& tensors, std::vector<Tensor>& averages, double decay) {
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    copy_strided(averages[i], add(averages[i], mul(sub(tensors[i], averages[i]), 1 - decay)));
    copy_strided(tensors[i], averages[i]);
  }
}

// The fused update (one pass, one launch on a GPU) does the per-tensor ops' arithmetic in their
// order and rounding: bit for bit in f32 and f64. In 16 bits the ops rounded t − a and its
// product to 16 bits, the fused pass keeps them in f32: within a rounding of the dtype. A
// non-contiguous tensor (a transposed view) is updated in place too.
TEST(Lookahead, FusedUpdateEqualsThePerTensorOps) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const std::vector<Tensor> start = {randn({3, 5}).to(dtype), randn({7}).to(dtype),
                                       randn({4, 6}).to(dtype)};
    std::vector<Tensor> fused_tensors, op_tensors;
    for (const Tensor& t : start) {
      fused_tensors.push_back(t.clone());
      op_tensors.push_back(t.clone());
    }
    fused_tensors[2] = fused_tensors[2].transpose(0, 1);  // a view: not contiguous
    op_tensors[2] = op_tensors[2].transpose(0, 1);
    Lookahead lookahead(fused_tensors);
    std::vector<Tensor> op_averages;
    for (const Tensor& t : op_tensors) op_averages.push_back(t.clone());
    for (double decay : {0.1, 0.7737809375, 1.0}) {
      for (std::size_t i = 0; i < start.size(); ++i) {  // training moves the tensors
        const Tensor moved = randn(op_tensors[i].shape()).to(dtype);
        copy_strided(fused_tensors[i], moved);
        copy_strided(op_tensors[i], moved);
      }
      // 16 bits: the ops' two extra roundings, of t − a and of its product, each at most
      // u·|t − a| <= u·(|t| + |a|) (u the unit roundoff), and the result's own rounding.
      const double u = dtype == DType::bf16 ? 0x1p-8 : dtype == DType::f16 ? 0x1p-11 : 0;
      std::vector<double> largest;
      for (std::size_t i = 0; i < start.size(); ++i)
        largest.push_back(max_abs(op_tensors[i]) + max_abs(op_averages[i]));
      lookahead.update(decay);
      update_by_ops(op_tensors, op_averages, decay);
      for (std::size_t i = 0; i < start.size(); ++i) {
        SCOPED_TRACE(i);
        const double atol = 2 * u * largest[i];
        EXPECT_TRUE(all_close(fused_tensors[i], op_tensors[i], atol, 2 * u));
        EXPECT_TRUE(all_close(lookahead.averages()[i], op_averages[i], atol, 2 * u));
      }
    }
  }
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
