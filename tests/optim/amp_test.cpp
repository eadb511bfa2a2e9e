#include "optim/amp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/rng.h"
#include "nn/layers.h"
#include "ops/ops.h"
#include "optim/adamw.h"
#include "optim/checkpoint.h"
#include "optim/sgd.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

// conv -> BN -> relu -> pool -> linear: every kind of layer the policy treats differently.
std::shared_ptr<nn::Module> small_net(uint64_t seed = 7) {
  manual_seed(seed);
  return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(3, 8, nn::Size2{3, 3}, nn::Conv2dOptions{.padding = {1, 1}}),
      std::make_shared<nn::BatchNorm2d>(8), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::AdaptiveAvgPool2d>(nn::Size2{1, 1}), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(8, 4)});
}

struct Batch {
  Tensor x, y;
};
std::vector<Batch> synthetic_batches() {
  manual_seed(123);
  std::vector<Batch> batches;
  for (int i = 0; i < 4; ++i) {
    Tensor y = (rand({16}) * 4.0).to(DType::i64);
    // Class-dependent means, so there is something to learn.
    Tensor x = randn({16, 3, 8, 8}) + y.to(DType::f32).view({16, 1, 1, 1}) * 0.5;
    batches.push_back({x, y});
  }
  return batches;
}

enum class Variant { proper, no_unscale };

// `steps` SGD steps through MixedPrecision at `level`; the f32 loss of every step.
std::vector<double> train(OptLevel level, DType dtype, int steps, double lr,
                          Variant variant = Variant::proper) {
  auto net = small_net();
  MixedPrecision amp(*net, {level, dtype, {.init_scale = 1024}});
  SGD opt(amp.optimizer_params(), {.lr = lr, .momentum = 0.9});
  const auto batches = synthetic_batches();
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    const Batch& b = batches[s % batches.size()];
    Tensor logits;
    {
      auto autocast = amp.autocast();
      logits = net->forward(amp.cast_input(b.x));
    }
    Tensor loss = cross_entropy(logits, b.y);
    losses.push_back(loss.item());
    opt.zero_grad();
    amp.backward(loss);
    if (variant == Variant::no_unscale) {
      opt.step();  // the bug this test must catch: S·g applied as if it were g
      continue;
    }
    EXPECT_TRUE(amp.step(opt));  // no overflow at this scale: the curves align step for step
    amp.update();
  }
  return losses;
}

double max_gap(const std::vector<double>& a, const std::vector<double>& b) {
  double gap = 0;
  for (std::size_t i = 0; i < a.size(); ++i) gap = std::max(gap, std::abs(a[i] - b[i]));
  return std::isfinite(gap) ? gap : INFINITY;
}

TEST(MixedPrecision, ParsesLevelsAndDtypes) {
  EXPECT_EQ(parse_opt_level("O2"), OptLevel::O2);
  EXPECT_EQ(parse_opt_level("o3"), OptLevel::O3);
  EXPECT_EQ(opt_level_name(OptLevel::O1), "O1");
  EXPECT_EQ(parse_amp_dtype("fp16"), DType::f16);
  EXPECT_EQ(parse_amp_dtype("bf16"), DType::bf16);
  for (const char* bad : {"O4", "O", "1", "", "O12"})
    EXPECT_TRUE(throws_error([&] { parse_opt_level(bad); }, {"opt level", "O0, O1, O2 or O3"}));
  for (const char* bad : {"fp32", "half", ""})
    EXPECT_TRUE(throws_error([&] { parse_amp_dtype(bad); }, {"dtype", "fp16 or bf16"}));
  auto net = small_net();
  EXPECT_TRUE(throws_error(
      [&] {
        MixedPrecision(*net, {OptLevel::O1, DType::f32, {}});
      },
      {"amp", "f16 or bf16"}));
  MixedPrecision amp(*net, {OptLevel::O1, DType::f16, {}});
  EXPECT_TRUE(throws_error([&] { amp.backward(scalar_tensor(1, {DType::i64})); },
                           {"amp.backward", "one-element floating"}));
}

TEST(MixedPrecision, O1RunsTheLayersInTheDtypesThePolicyNames) {
  auto net = small_net();
  MixedPrecision amp(*net, {OptLevel::O1, DType::bf16, {}});
  for (const auto& [name, p] : net->named_parameters()) EXPECT_EQ(p.dtype(), DType::f32) << name;
  const Tensor x = randn({2, 3, 8, 8});
  EXPECT_TRUE(amp.cast_input(x).same_as(x));
  auto& seq = *net;
  Tensor conv_out, logits;
  {
    auto autocast = amp.autocast();
    conv_out = seq.children()[0].second->forward(x);
    logits = seq.forward(x);
    EXPECT_EQ(autocast_cache_size(), 4u);  // conv and linear weights and biases, cast once
  }
  EXPECT_EQ(conv_out.dtype(), DType::bf16);  // conv in bf16
  EXPECT_EQ(logits.dtype(), DType::bf16);    // linear in bf16
  Tensor loss = cross_entropy(logits, from_vector<int64_t>({0, 1}, {2}, {DType::i64}));
  {
    auto autocast = amp.autocast();
    EXPECT_EQ(cross_entropy(logits, from_vector<int64_t>({0, 1}, {2}, {DType::i64})).dtype(),
              DType::f32);  // losses in f32
  }
  amp.backward(loss);
  for (const auto& [name, p] : net->named_parameters())
    EXPECT_EQ(p.grad().dtype(), DType::f32) << name;  // gradients land on the f32 weights
}

TEST(MixedPrecision, O2KeepsF32MastersAndTheModelHoldsTheirRounding) {
  for (DType dt : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    auto net = small_net();
    MixedPrecision amp(*net, {OptLevel::O2, dt, {.init_scale = 1024}});
    const auto named = net->named_parameters();
    for (std::size_t i = 0; i < named.size(); ++i) {
      const bool bn = named[i].first.starts_with("1.");
      EXPECT_EQ(named[i].second.dtype(), bn ? DType::f32 : dt) << named[i].first;
      EXPECT_EQ(amp.optimizer_params()[i].dtype(), DType::f32);
      EXPECT_EQ(amp.optimizer_params()[i].same_as(named[i].second), bn);  // BN: its own master
    }
    SGD opt(amp.optimizer_params(), {.lr = 0.05, .momentum = 0.9});
    const auto batches = synthetic_batches();
    for (int s = 0; s < 5; ++s) {
      Tensor loss = cross_entropy(net->forward(amp.cast_input(batches[s % 4].x)), batches[s % 4].y);
      opt.zero_grad();
      amp.backward(loss);
      for (std::size_t i = 0; i < named.size(); ++i) {
        EXPECT_EQ(amp.optimizer_params()[i].grad().dtype(), DType::f32);
        if (!amp.optimizer_params()[i].same_as(named[i].second)) {
          EXPECT_FALSE(named[i].second.grad().defined());  // moved into the master
        }
      }
      EXPECT_TRUE(amp.step(opt));
      amp.update();
      for (std::size_t i = 0; i < named.size(); ++i) {
        const Tensor master = amp.optimizer_params()[i];
        EXPECT_EQ(master.dtype(), DType::f32);
        // The model's weight is exactly the master rounded to 16 bits.
        EXPECT_TRUE(all_close(named[i].second, master.to(named[i].second.dtype()), 0, 0))
            << named[i].first;
      }
    }
    // The masters hold what 16 bits cannot: they differ from the model's rounded copies.
    double diff = 0;
    for (std::size_t i = 0; i < named.size(); ++i)
      diff += max_gap(amp.optimizer_params()[i].to_vector<double>(),
                      named[i].second.to_vector<double>());
    EXPECT_GT(diff, 0);
  }
}

TEST(MixedPrecision, O3IsAll16BitAndSgdAndAdamwStepThere) {
  const auto batches = synthetic_batches();
  for (bool adam : {false, true}) {
    auto net = small_net();
    MixedPrecision amp(*net, {OptLevel::O3, DType::f16, {.init_scale = 1024}});
    for (const auto& [name, p] : net->named_parameters()) EXPECT_EQ(p.dtype(), DType::f16) << name;
    for (const auto& [name, b] : net->named_buffers()) {
      if (is_floating(b.dtype())) {
        EXPECT_EQ(b.dtype(), DType::f16) << name;
      }
    }
    std::unique_ptr<Optimizer> opt;
    if (adam)
      opt = std::make_unique<AdamW>(amp.optimizer_params(), AdamWOptions{.lr = 1e-2});
    else
      opt = std::make_unique<SGD>(amp.optimizer_params(), SGDOptions{.lr = 0.05, .momentum = 0.9});
    const Tensor before = amp.optimizer_params()[0].detach().clone();
    Tensor loss = cross_entropy(net->forward(amp.cast_input(batches[0].x)), batches[0].y);
    EXPECT_EQ(loss.dtype(), DType::f16);  // no autocast at O3: the loss is f16 too
    opt->zero_grad();
    amp.backward(loss);
    EXPECT_EQ(amp.optimizer_params()[0].grad().dtype(), DType::f16);
    EXPECT_TRUE(amp.step(*opt)) << opt->name();
    amp.update();
    EXPECT_EQ(amp.optimizer_params()[0].dtype(), DType::f16);
    EXPECT_FALSE(all_close(amp.optimizer_params()[0], before, 0, 0)) << opt->name();
  }
}

// The O1 and O2 loss curves follow the f32 (O0) one: 24 SGD steps (lr 0.05, momentum 0.9) of
// a conv+BN+linear net on 4 fixed batches, the loss going from about 1.4 down by more than 0.1.
// The scale starts at 1024 so that no step overflows and the curves align step for step (the
// skipping itself is tested in loss_scaler_test.cpp).
//
// Tolerance: max over steps of |loss_Ox − loss_O0| <= 3·u·ln 4, u = the unit roundoff (f16
// 2⁻¹¹: 2.0e-3; bf16 2⁻⁸: 1.6e-2) — the loss is ~ln 4 and each forward rounds weights and
// activations to 16 bits. Observed on this machine: f16 4.6e-4 (O1 and O2), bf16 3.7e-3, i.e.
// about one u of the loss: a 4x margin. Applying the scaled gradients without unscaling
// diverges far beyond it (checked below). What this curve cannot show at this learning rate is
// the loss of updates without masters (O3 follows it as closely here); the O2 test above checks
// the masters directly.
TEST(MixedPrecision, O1AndO2FollowTheF32LossCurve) {
  const int steps = 24;
  const double lr = 0.05;
  const std::vector<double> ref = train(OptLevel::O0, DType::f16, steps, lr);
  EXPECT_LT(ref.back(), ref.front() - 0.1);  // it does learn
  for (DType dt : {DType::f16, DType::bf16}) {
    const double u = dt == DType::f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    const double tol = 3 * u * std::log(4.0);
    for (OptLevel level : {OptLevel::O1, OptLevel::O2}) {
      const double gap = max_gap(train(level, dt, steps, lr), ref);
      EXPECT_LE(gap, tol) << opt_level_name(level) << " " << dtype_name(dt);
      EXPECT_GT(gap, 0) << "16-bit runs cannot match f32 exactly: is the level applied?";
    }
    EXPECT_GT(max_gap(train(OptLevel::O2, dt, steps, lr, Variant::no_unscale), ref), tol);
  }
}

TEST(MixedPrecision, O2CheckpointRestoresMastersAndScaler) {
  const auto batches = synthetic_batches();
  auto net = small_net();
  MixedPrecision amp(*net, {OptLevel::O2, DType::f16, {.init_scale = 1024}});
  SGD opt(amp.optimizer_params(), {.lr = 0.05, .momentum = 0.9});
  auto one_step = [&](nn::Module& m, MixedPrecision& a, SGD& o, int s) {
    Tensor loss = cross_entropy(m.forward(a.cast_input(batches[s % 4].x)), batches[s % 4].y);
    o.zero_grad();
    a.backward(loss);
    a.step(o);
    a.update();
    return loss.item();
  };
  for (int s = 0; s < 3; ++s) one_step(*net, amp, opt, s);
  const std::string path = temp_path("amp.safetensors");
  save_checkpoint(path, *net, &opt, nullptr, {}, &amp);

  auto net2 = small_net(99);  // other initial weights
  MixedPrecision amp2(*net2, {OptLevel::O2, DType::f16, {}});
  SGD opt2(amp2.optimizer_params(), {.lr = 0.05, .momentum = 0.9});
  load_checkpoint(path, *net2, &opt2, nullptr, &amp2);
  EXPECT_EQ(amp2.scaler()->scale_value(), amp.scaler()->scale_value());
  EXPECT_EQ(amp2.scaler()->steps(), 3);
  for (std::size_t i = 0; i < amp.optimizer_params().size(); ++i)
    EXPECT_TRUE(all_close(amp2.optimizer_params()[i], amp.optimizer_params()[i], 0, 0));
  // Training goes on identically.
  for (int s = 3; s < 5; ++s)
    EXPECT_EQ(one_step(*net2, amp2, opt2, s), one_step(*net, amp, opt, s));

  // An f32 model loads the masters (full precision), not the 16-bit copies.
  auto plain = small_net(5);
  load_checkpoint(path, *plain, nullptr, nullptr);
  const StateDict sd = amp.state_dict();  // after 5 steps; the file holds step 3
  const auto file = load_safetensors(path);
  EXPECT_TRUE(all_close(plain->named_parameters()[0].second,
                        file.tensors.at("amp.master." + plain->named_parameters()[0].first), 0, 0));
  // A run at another level refuses the file.
  auto net3 = small_net();
  MixedPrecision amp3(*net3, {OptLevel::O1, DType::f16, {}});
  EXPECT_TRUE(throws_error([&] { load_checkpoint(path, *net3, nullptr, nullptr, &amp3); },
                           {"saved at O2", "this run is O1"}));
}

// bf16 trains without a loss scaler unless told otherwise (its exponent range is f32's), so a
// step reads no verdict back; f16 keeps the dynamic scaler. A checkpoint saved without a scaler
// cannot feed one, and says how to resume; a scaler's state is dropped by a run without one.
TEST(MixedPrecision, Bf16TrainsWithoutALossScalerByDefault) {
  EXPECT_EQ(default_loss_scale(DType::bf16).mode, LossScaleMode::none);
  EXPECT_EQ(default_loss_scale(DType::f16).mode, LossScaleMode::dynamic);
  const auto batches = synthetic_batches();
  auto net = small_net();
  MixedPrecision amp(*net, {OptLevel::O1, DType::bf16, default_loss_scale(DType::bf16)});
  EXPECT_EQ(amp.scaler(), nullptr);
  SGD opt(amp.optimizer_params(), {.lr = 0.05, .momentum = 0.9});
  const Tensor before = net->parameters()[0].detach().clone();
  for (int s = 0; s < 2; ++s) {
    opt.zero_grad();
    Tensor loss;
    {
      const AutocastGuard autocast = amp.autocast();
      loss = cross_entropy(net->forward(batches[s].x), batches[s].y);
    }
    amp.backward(loss);
    EXPECT_TRUE(amp.step(opt));
    amp.update();
  }
  EXPECT_FALSE(all_close(net->parameters()[0], before, 0, 0));  // it trained
  const std::string path = temp_path("bf16_no_scaler.safetensors");
  save_checkpoint(path, *net, &opt, nullptr, {}, &amp);
  EXPECT_EQ(load_safetensors(path).metadata.count("scaler.mode"), 0u);

  auto scaled = small_net();
  MixedPrecision with_scaler(*scaled, {OptLevel::O1, DType::bf16, {}});
  ASSERT_NE(with_scaler.scaler(), nullptr);
  EXPECT_TRUE(throws_error([&] { load_checkpoint(path, *scaled, nullptr, nullptr, &with_scaler); },
                           {"without a loss scaler", "--loss-scale none"}));
  const std::string scaled_path = temp_path("bf16_scaler.safetensors");
  save_checkpoint(scaled_path, *scaled, nullptr, nullptr, {}, &with_scaler);
  auto plain = small_net();
  MixedPrecision without(*plain, {OptLevel::O1, DType::bf16, {.mode = LossScaleMode::none}});
  load_checkpoint(scaled_path, *plain, nullptr, nullptr, &without);
  EXPECT_TRUE(all_close(plain->parameters()[0], scaled->parameters()[0], 0, 0));

  // O2 without a scaler still rounds the stepped f32 masters into the bf16 model.
  auto half = small_net();
  MixedPrecision o2(*half, {OptLevel::O2, DType::bf16, default_loss_scale(DType::bf16)});
  SGD o2_opt(o2.optimizer_params(), {.lr = 0.05});
  const Tensor model_before = half->parameters()[0].detach().clone();
  o2_opt.zero_grad();
  o2.backward(cross_entropy(half->forward(o2.cast_input(batches[0].x)), batches[0].y));
  EXPECT_TRUE(o2.step(o2_opt));
  EXPECT_FALSE(all_close(half->parameters()[0], model_before, 0, 0));
  EXPECT_TRUE(all_close(half->parameters()[0], o2.optimizer_params()[0].to(DType::bf16), 0, 0));
}

}  // namespace
}  // namespace rg
