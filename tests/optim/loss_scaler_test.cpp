#include "optim/loss_scaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/ops.h"
#include "optim/checkpoint.h"
#include "optim/clip_grad.h"
#include "optim/sgd.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct TwoParams {
  Tensor w = from_vector<float>({1, 2, 3}, {3}).set_requires_grad(true);
  Tensor b = from_vector<float>({0.5f}, {1}).set_requires_grad(true);
  SGD opt{{w, b}, {.lr = 0.1}};
  // Gradients as a backward of scaler.scale(loss) would leave them: S times the true ones.
  void set_scaled_grads(double scale, double w_first = 1.0) {
    w.set_grad(from_vector<double>({w_first * scale, 2 * scale, 3 * scale}, {3}));
    b.set_grad(from_vector<double>({4 * scale}, {1}));
  }
};

TEST(LossScaler, ForcedOverflowSkipsTheStepHalvesTheScaleAndLeavesTheWeights) {
  TwoParams s;
  LossScaler scaler;
  scaler.set_param_names({"fc.weight", "fc.bias"});
  EXPECT_EQ(scaler.scale_value(), 65536.0);
  s.set_scaled_grads(scaler.scale_value(), kInf);  // an f16 overflow in the first weight
  const Tensor w_before = s.w.detach().clone(), b_before = s.b.detach().clone();
  EXPECT_FALSE(scaler.step(s.opt));
  scaler.update();
  EXPECT_EQ(scaler.scale_value(), 32768.0);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  EXPECT_TRUE(all_close(s.w, w_before, 0, 0));
  EXPECT_TRUE(all_close(s.b, b_before, 0, 0));
  ASSERT_TRUE(scaler.last_overflow().has_value());
  EXPECT_EQ(scaler.last_overflow()->param_name, "fc.weight");
  EXPECT_EQ(scaler.last_overflow()->param_index, 0u);
  EXPECT_EQ(scaler.last_overflow()->step, 0);
  // NaN counts too, and the report names the first offender in optimizer order.
  s.w.set_grad(ones({3}));
  s.b.set_grad(full({1}, std::nan("")));
  EXPECT_FALSE(scaler.step(s.opt));
  scaler.update();
  EXPECT_EQ(scaler.last_overflow()->param_name, "fc.bias");
  EXPECT_EQ(scaler.last_overflow()->step, 1);
  EXPECT_EQ(scaler.scale_value(), 16384.0);
  EXPECT_EQ(scaler.skipped_steps(), 2);
}

TEST(LossScaler, UnscaleGivesTrueGradientsForClippingThenSteps) {
  TwoParams s;
  LossScaler scaler;
  s.set_scaled_grads(scaler.scale_value());
  scaler.unscale(s.opt);
  EXPECT_TRUE(all_close(s.w.grad(), from_vector<float>({1, 2, 3}, {3}), 0, 0));
  EXPECT_DOUBLE_EQ(grad_norm({s.w, s.b}), std::sqrt(1.0 + 4 + 9 + 16));
  EXPECT_TRUE(scaler.step(s.opt));  // does not unscale a second time
  scaler.update();
  EXPECT_TRUE(all_close(s.w, from_vector<float>({0.9f, 1.8f, 2.7f}, {3}), 1e-7, 1e-6));
  EXPECT_EQ(scaler.growth_tracker(), 1);
  EXPECT_FALSE(scaler.last_overflow().has_value());
}

TEST(LossScaler, ScaleGrowsAfterTheIntervalUpToTheCeilingAndFallsToTheFloor) {
  TwoParams s;
  LossScaler scaler({.init_scale = 4, .growth_interval = 3, .min_scale = 1, .max_scale = 16});
  std::vector<double> history;
  for (int i = 0; i < 9; ++i) {
    s.set_scaled_grads(scaler.scale_value());
    EXPECT_TRUE(scaler.step(s.opt));
    scaler.update();
    history.push_back(scaler.scale_value());
  }
  EXPECT_EQ(history, (std::vector<double>{4, 4, 8, 8, 8, 16, 16, 16, 16}));  // capped at 16
  for (double expected : {8.0, 4.0, 2.0, 1.0, 1.0}) {                        // floored at 1
    s.set_scaled_grads(scaler.scale_value(), kInf);
    EXPECT_FALSE(scaler.step(s.opt));
    scaler.update();
    EXPECT_EQ(scaler.scale_value(), expected);
  }
  EXPECT_EQ(scaler.steps(), 14);
  EXPECT_EQ(scaler.skipped_steps(), 5);
}

TEST(LossScaler, StaticScaleNeverChangesButStillSkipsOverflows) {
  TwoParams s;
  LossScaler scaler(parse_loss_scale("128"));
  EXPECT_EQ(scaler.options().mode, LossScaleMode::fixed);
  s.set_scaled_grads(128, kInf);
  EXPECT_FALSE(scaler.step(s.opt));
  scaler.update();
  EXPECT_EQ(scaler.scale_value(), 128.0);
  for (int i = 0; i < 3; ++i) {
    s.set_scaled_grads(128);
    EXPECT_TRUE(scaler.step(s.opt));
    scaler.update();
  }
  EXPECT_EQ(scaler.scale_value(), 128.0);
  EXPECT_EQ(parse_loss_scale("dynamic").mode, LossScaleMode::dynamic);
  EXPECT_EQ(parse_loss_scale("none").mode, LossScaleMode::none);
  EXPECT_TRUE(throws_error([] { LossScaler({.mode = LossScaleMode::none}); }, {"means no scaler"}));
}

TEST(LossScaler, TheFoundInfHookDecides) {
  TwoParams s;
  LossScaler scaler;
  scaler.set_param_names({"fc.weight", "fc.bias"});
  std::vector<bool> seen;
  scaler.set_found_inf_hook([&](std::optional<std::size_t> local) {
    seen.push_back(local.has_value());
    return FoundInfVerdict{true, 3, 1};  // rank 3 overflowed, in parameter 1
  });
  s.set_scaled_grads(scaler.scale_value());
  const Tensor w_before = s.w.detach().clone();
  EXPECT_FALSE(scaler.step(s.opt));
  scaler.update();
  EXPECT_EQ(seen, std::vector<bool>{false});
  EXPECT_TRUE(all_close(s.w, w_before, 0, 0));
  EXPECT_EQ(scaler.scale_value(), 32768.0);
  // The report names the other rank's parameter, which never overflowed here.
  ASSERT_TRUE(scaler.last_overflow().has_value());
  EXPECT_EQ(scaler.last_overflow()->param_name, "fc.bias");
  EXPECT_EQ(scaler.last_overflow()->rank, 3);
  EXPECT_EQ(describe_skip(*scaler.last_step()),
            "step 1: gradient overflow in fc.bias on rank 3, step skipped, loss scale now 32768");
  // A hook naming a parameter the optimizer does not have is refused.
  scaler.set_found_inf_hook([](std::optional<std::size_t>) { return FoundInfVerdict{true, 0, 7}; });
  s.set_scaled_grads(scaler.scale_value());
  EXPECT_TRUE(
      throws_error([&] { scaler.unscale(s.opt); }, {"hook named parameter 7", "2 parameters"}));
}

// One record per step: the scale it used, the scale after, whether it skipped and why — and
// the overflow of an earlier step never leaks into a later step's record.
TEST(LossScaler, KeepsARecordOfEveryStep) {
  TwoParams s;
  LossScaler scaler({.growth_interval = 2});
  scaler.set_param_names({"fc.weight", "fc.bias"});
  EXPECT_FALSE(scaler.last_step().has_value());
  s.set_scaled_grads(scaler.scale_value());
  scaler.step(s.opt);
  scaler.update();  // step 0: clean
  s.set_scaled_grads(scaler.scale_value(), kInf);
  scaler.step(s.opt);
  scaler.update();               // step 1: fc.weight overflows
  for (int i = 0; i < 2; ++i) {  // steps 2, 3: clean; the scale grows after the second
    s.set_scaled_grads(scaler.scale_value());
    scaler.step(s.opt);
    scaler.update();
  }
  const std::vector<ScalerStep> history = scaler.take_history();
  ASSERT_EQ(history.size(), 4u);
  const double s0 = 65536.0;
  EXPECT_EQ(history[0].step, 0);
  EXPECT_EQ(history[0].scale, s0);
  EXPECT_EQ(history[0].next_scale, s0);
  EXPECT_FALSE(history[0].skipped);
  EXPECT_FALSE(history[0].overflow.has_value());
  EXPECT_TRUE(history[1].skipped);
  ASSERT_TRUE(history[1].overflow.has_value());
  EXPECT_EQ(history[1].overflow->param_name, "fc.weight");
  EXPECT_EQ(history[1].overflow->rank, -1);  // no hook: this process
  EXPECT_EQ(history[1].next_scale, s0 / 2);
  EXPECT_FALSE(history[2].skipped);
  EXPECT_FALSE(history[2].overflow.has_value());  // not fc.weight again
  EXPECT_EQ(history[3].scale, s0 / 2);
  EXPECT_EQ(history[3].next_scale, s0);
  EXPECT_EQ(describe_skip(history[1]),
            "step 2: gradient overflow in fc.weight, step skipped, loss scale now 32768");
  EXPECT_TRUE(scaler.take_history().empty());  // taken once
  EXPECT_EQ(scaler.last_step()->step, 3);
}

TEST(LossScaler, ScaleMultipliesAndComputes16BitLossesInF32) {
  LossScaler scaler;
  const Tensor loss = scalar_tensor(2.0).to(DType::f16);
  const Tensor scaled = scaler.scale(loss);
  EXPECT_EQ(scaled.dtype(), DType::f32);  // 2·65536 would overflow f16
  EXPECT_EQ(scaled.item(), 131072.0);
}

TEST(LossScaler, BadInputs) {
  TwoParams s;
  LossScaler scaler;
  EXPECT_TRUE(throws_error([&] { scaler.scale(scalar_tensor(1, {DType::i64})); },
                           {"LossScaler.scale", "floating", "i64"}));
  EXPECT_TRUE(throws_error([&] { scaler.scale(ones({2})); }, {"one element", "[2]"}));
  EXPECT_TRUE(throws_error([&] { scaler.scale(Tensor()); }, {"undefined"}));
  EXPECT_TRUE(throws_error([&] { scaler.update(); }, {"LossScaler.update", "no unscale()"}));
  s.set_scaled_grads(scaler.scale_value());
  scaler.unscale(s.opt);
  EXPECT_TRUE(throws_error([&] { scaler.unscale(s.opt); }, {"unscale", "already called"}));
  SGD other({ones({1}).set_requires_grad(true)}, {.lr = 0.1});
  EXPECT_TRUE(throws_error([&] { scaler.step(other); }, {"another optimizer"}));
  scaler.update();
  scaler.set_param_names({"only one"});
  EXPECT_TRUE(throws_error([&] { scaler.unscale(s.opt); }, {"1 parameter names", "2 parameters"}));
  for (double bad : {0.0, -1.0, kInf})
    EXPECT_TRUE(throws_error([&] { LossScaler({.init_scale = bad}); }, {"init_scale"}));
  EXPECT_TRUE(throws_error([] { LossScaler({.min_scale = 8, .max_scale = 4}); },
                           {"floor", "above max_scale"}));
  EXPECT_TRUE(throws_error([] { LossScaler({.growth_factor = 1}); }, {"growth_factor"}));
  EXPECT_TRUE(throws_error([] { LossScaler({.backoff_factor = 1}); }, {"backoff_factor"}));
  EXPECT_TRUE(throws_error([] { LossScaler({.growth_interval = 0}); }, {"growth_interval"}));
  EXPECT_TRUE(throws_error([] { LossScaler({.init_scale = 1e9}); }, {"outside"}));
  for (const char* bad : {"0", "-4", "abc", "12x", "", "inf"})
    EXPECT_TRUE(throws_error([&] { parse_loss_scale(bad); }, {"--loss-scale", "dynamic", "none"}));
}

TEST(LossScaler, StateRoundTripsThroughACheckpoint) {
  TwoParams s;
  LossScaler scaler({.init_scale = 1024, .growth_interval = 5});
  for (int i = 0; i < 3; ++i) {
    s.set_scaled_grads(scaler.scale_value(), i == 0 ? kInf : 1.0);
    scaler.step(s.opt);
    scaler.update();
  }
  const StateDict sd = scaler.state_dict();
  EXPECT_EQ(sd.metadata.at("scaler.scale"), "512");
  const std::string path = temp_path("scaler.safetensors");
  save_safetensors(path, {{"x", zeros({1})}}, sd.metadata);
  LossScaler restored;
  restored.load_state_dict({{}, load_safetensors(path).metadata});
  EXPECT_EQ(restored.scale_value(), 512.0);
  EXPECT_EQ(restored.growth_tracker(), 2);
  EXPECT_EQ(restored.skipped_steps(), 1);
  EXPECT_EQ(restored.steps(), 3);
  EXPECT_EQ(restored.options().growth_interval, 5);
  // Broken metadata is refused and changes nothing.
  StateDict bad = sd;
  bad.metadata["scaler.scale"] = "-3";
  EXPECT_TRUE(
      throws_error([&] { restored.load_state_dict(bad); }, {"load_state_dict", "init_scale"}));
  bad = sd;
  bad.metadata.erase("scaler.growth_tracker");
  EXPECT_TRUE(throws_error([&] { restored.load_state_dict(bad); }, {"scaler.growth_tracker"}));
  EXPECT_EQ(restored.scale_value(), 512.0);
}

}  // namespace
}  // namespace rg
