#include <gtest/gtest.h>

#include "tests/optim/optim_fixture.h"

namespace rg {
namespace {
using namespace rg::testing;

const std::vector<std::string> kBuffers = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};

// The options of each case, as in tools/fixtures/optim_adamw.py.
MakeOptimizer adamw(AdamWOptions o) {
  return [o](const std::vector<Tensor>& ps) { return std::make_unique<AdamW>(ps, o); };
}

TEST(AdamW, MatchesPyTorchDefaults) {
  check_optimizer_case("optim_adamw", "default", adamw({.lr = 0.01}), kBuffers);
}

TEST(AdamW, MatchesPyTorchBetasAndEps) {
  check_optimizer_case(
      "optim_adamw", "betas_eps",
      adamw({.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0}), kBuffers);
}

TEST(AdamW, MatchesPyTorchAmsgrad) {
  check_optimizer_case("optim_adamw", "amsgrad",
                       adamw({.lr = 0.01, .weight_decay = 0.1, .amsgrad = AmsGrad::on}), kBuffers);
}

TEST(AdamW, MatchesPyTorchGroupsAndMissingGradients) {
  // Parameter 1 has no gradient at step 0 and parameter 2 none at step 2: their step counts
  // (and so their bias corrections) fall behind the others'.
  check_optimizer_case(
      "optim_adamw", "groups",
      [](const std::vector<Tensor>& ps) {
        return std::make_unique<AdamW>(std::vector<ParamGroup<AdamWOptions>>{
            {{ps[0], ps[1]}, {.lr = 0.01}},
            {{ps[2]}, {.lr = 0.005, .beta1 = 0.3, .beta2 = 0.9, .amsgrad = AmsGrad::on}}});
      },
      kBuffers);
}

TEST(AdamW, MatchesPyTorchF64) {
  check_optimizer_case("optim_adamw", "f64", adamw({.lr = 0.01, .amsgrad = AmsGrad::on}), kBuffers,
                       1e-12, 1e-12);
}

TEST(AdamW, CountsStepsPerParameter) {
  Tensor a = zeros({2}).set_requires_grad(true), b = zeros({2}).set_requires_grad(true);
  AdamW opt({a, b}, {.lr = 0.1});
  for (int k = 0; k < 3; ++k) {
    a.set_grad(ones({2}));
    if (k == 1) b.set_grad(ones({2}));
    opt.step();
    opt.zero_grad();
  }
  const StateDict sd = opt.state_dict();
  EXPECT_EQ(sd.metadata.at("optim.state.0.step"), "3");
  EXPECT_EQ(sd.metadata.at("optim.state.1.step"), "1");
  // After one bias-corrected step with a constant gradient the update is lr·g/(|g| + eps).
  EXPECT_NEAR(b.to_vector<double>()[0], -0.1, 1e-6);
}

TEST(AdamW, BadHyperparameters) {
  Tensor p = ones({2}).set_requires_grad(true);
  EXPECT_TRUE(throws_error([&] { AdamW({p}, {.lr = -1}); }, {"AdamW", "learning rate", "-1"}));
  EXPECT_TRUE(throws_error([&] { AdamW({p}, {.beta1 = -0.1}); }, {"AdamW", "beta1", "[0, 1)"}));
  EXPECT_TRUE(throws_error([&] { AdamW({p}, {.beta1 = 1.0}); }, {"AdamW", "beta1", "[0, 1)"}));
  EXPECT_TRUE(throws_error([&] { AdamW({p}, {.beta2 = 1.5}); }, {"AdamW", "beta2", "1.5"}));
  EXPECT_TRUE(throws_error([&] { AdamW({p}, {.eps = -1e-8}); }, {"AdamW", "eps"}));
  EXPECT_TRUE(throws_error([&] { AdamW({p}, {.weight_decay = -0.1}); }, {"AdamW", "weight_decay"}));
  EXPECT_TRUE(throws_error([] { AdamW({}, {}); }, {"AdamW", "empty parameter list"}));
}

}  // namespace
}  // namespace rg
