#include "optim/lr_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "optim/sgd.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

// The optimizer of tools/fixtures/optim_lr.py: two groups with lr 0.1 and 0.02.
struct TwoGroups {
  Tensor a = zeros({1}).set_requires_grad(true), b = zeros({1}).set_requires_grad(true);
  SGD opt{std::vector<ParamGroup<SGDOptions>>{{{a}, {.lr = 0.1}}, {{b}, {.lr = 0.02}}}};
};

// Row t of "<name>.lr" holds the lrs after t steps; compares the first `rows` rows (all by
// default), through the optimizer.
void check_sequence(const std::string& name, Optimizer& opt, LRScheduler& sched,
                    std::size_t rows = 0) {
  SCOPED_TRACE(name);
  const std::vector<double> want = Fixture("optim_lr")[name + ".lr"].to_vector<double>();
  const std::size_t groups = opt.num_groups();
  if (rows == 0) rows = want.size() / groups;
  for (std::size_t t = 0; t < rows; ++t) {
    if (t > 0) sched.step();
    EXPECT_EQ(sched.last_step(), static_cast<int64_t>(t));
    for (std::size_t g = 0; g < groups; ++g) {
      const double w = want[t * groups + g];
      // PyTorch steps some schedules recursively; the closed forms agree up to rounding.
      EXPECT_NEAR(opt.lr(g), w, 1e-15 + 1e-12 * std::fabs(w)) << "step " << t << " group " << g;
      EXPECT_DOUBLE_EQ(sched.get_lr()[g], opt.lr(g));
    }
  }
}

TEST(LRScheduler, MultiStepLRMatchesPyTorch) {
  TwoGroups m;
  MultiStepLR sched(m.opt, {6, 3, 9, 6}, 0.5);  // unsorted, 6 twice: decays twice at 6
  check_sequence("multistep", m.opt, sched);
}

TEST(LRScheduler, CosineAnnealingLRMatchesPyTorch) {
  TwoGroups m;
  CosineAnnealingLR sched(m.opt, 10, 0.001);  // 25 steps: past T_max it rises again
  check_sequence("cosine", m.opt, sched);
}

TEST(LRScheduler, OneCycleLRMatchesPyTorch) {
  TwoGroups m;
  OneCycleLR sched(m.opt, {0.1, 0.05}, 20);
  check_sequence("onecycle", m.opt, sched);
  EXPECT_TRUE(throws_error([&] { sched.step(); }, {"OneCycleLR", "step 21", "total_steps = 20"}));
  EXPECT_EQ(sched.last_step(), 20);  // a refused step changes nothing
}

TEST(LRScheduler, OneCycleLRLinearMatchesPyTorch) {
  TwoGroups m;
  OneCycleLR sched(
      m.opt, 0.2, 15,
      {.pct_start = 0.25, .anneal = Anneal::linear, .div_factor = 10, .final_div_factor = 100});
  // Steps 0 .. 14 as PyTorch. At step 15 = total_steps PyTorch extrapolates the linear phase
  // to a negative lr (-0.0176); ringgrad holds the final lr max_lr / 10 / 100.
  check_sequence("onecycle_linear", m.opt, sched, 15);
  sched.step();
  EXPECT_NEAR(m.opt.lr(0), 0.2 / 10 / 100, 1e-15);
  EXPECT_LT(Fixture("optim_lr")["onecycle_linear.lr"].to_vector<double>().back(), 0);
}

TEST(LRScheduler, LinearWarmupThenCosineMatchesSequentialLR) {
  TwoGroups m;
  LinearWarmup sched(m.opt, std::make_unique<CosineAnnealingLR>(m.opt, 10), 5, 0.1);
  check_sequence("warmup_cosine", m.opt, sched);
}

TEST(LRScheduler, LinearWarmupThenMultiStepMatchesSequentialLR) {
  TwoGroups m;
  LinearWarmup sched(m.opt, std::make_unique<MultiStepLR>(m.opt, std::vector<int64_t>{3, 6}), 4,
                     0.25);
  check_sequence("warmup_multistep", m.opt, sched);
}

// PyTorch's LinearLR(opt, start_factor=0.5, end_factor=0.1, total_iters=4), by hand:
// factor 0.5, 0.4, 0.3, 0.2, 0.1, then 0.1 held.
TEST(LRScheduler, LinearLRMovesLinearlyThenHolds) {
  TwoGroups m;
  LinearLR sched(m.opt, 0.5, 0.1, 4);
  const std::vector<double> factor = {0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1};
  for (std::size_t t = 0; t < factor.size(); ++t) {
    if (t > 0) sched.step();
    EXPECT_NEAR(m.opt.lr(0), 0.1 * factor[t], 1e-16) << t;
    EXPECT_NEAR(m.opt.lr(1), 0.02 * factor[t], 1e-16) << t;
  }
  TwoGroups n;
  LinearLR other(n.opt, 1.0, 1.0, 1);
  const auto saved = sched.state_dict();
  other.load_state_dict(saved);
  EXPECT_EQ(other.last_step(), 6);
  EXPECT_NEAR(n.opt.lr(0), 0.1 * 0.1, 1e-16);
  EXPECT_TRUE(throws_error([&] { LinearLR(n.opt, 1.0, 0.5, 0); }, {"LinearLR", "total_steps"}));
  EXPECT_TRUE(throws_error([&] { LinearLR(n.opt, -1.0, 0.5, 3); }, {"LinearLR", "start_factor"}));
}

TEST(LRScheduler, LinearWarmupAloneHoldsTheBaseLr) {
  TwoGroups m;
  LinearWarmup sched(m.opt, nullptr, 4, 0.0);
  const std::vector<double> want = {0, 0.025, 0.05, 0.075, 0.1, 0.1, 0.1};
  for (std::size_t t = 0; t < want.size(); ++t) {
    if (t > 0) sched.step();
    EXPECT_DOUBLE_EQ(m.opt.lr(0), want[t]) << t;
    EXPECT_DOUBLE_EQ(m.opt.lr(1), want[t] / 5) << t;
  }
  TwoGroups n;
  LinearWarmup none(n.opt, nullptr, 0);  // no warm-up at all
  EXPECT_DOUBLE_EQ(n.opt.lr(0), 0.1);
}

TEST(LRScheduler, LrAtIsTheClosedForm) {
  TwoGroups m;
  CosineAnnealingLR sched(m.opt, 8, 0.0);
  EXPECT_DOUBLE_EQ(sched.lr_at(4, 0), 0.05);
  EXPECT_NEAR(sched.lr_at(8, 1), 0.0, 1e-18);
  EXPECT_DOUBLE_EQ(sched.lr_at(2, 0), 0.05 * (1 + std::cos(std::numbers::pi / 4)));
  EXPECT_EQ(sched.last_step(), 0);  // lr_at has no side effects
  EXPECT_DOUBLE_EQ(m.opt.lr(0), 0.1);
}

TEST(LRScheduler, StateDictRoundTrip) {
  TwoGroups m, n;
  LinearWarmup a(m.opt, std::make_unique<CosineAnnealingLR>(m.opt, 20, 1e-4), 3, 0.2);
  for (int k = 0; k < 7; ++k) a.step();
  const std::map<std::string, std::string> sd = a.state_dict();
  ASSERT_EQ(sd.count("lr_scheduler"), 1u);
  // A fresh scheduler with other options: the checkpoint's win, as in PyTorch.
  n.opt.set_lr(0, 1.0);
  LinearWarmup b(n.opt, std::make_unique<CosineAnnealingLR>(n.opt, 50), 10, 0.5);
  b.load_state_dict(sd);
  EXPECT_EQ(b.last_step(), 7);
  EXPECT_DOUBLE_EQ(n.opt.lr(0), m.opt.lr(0));
  for (int k = 0; k < 30; ++k) {
    a.step();
    b.step();
    EXPECT_EQ(n.opt.lr(0), m.opt.lr(0));
    EXPECT_EQ(n.opt.lr(1), m.opt.lr(1));
  }
}

TEST(LRScheduler, LoadStateDictErrors) {
  TwoGroups m;
  MultiStepLR multi(m.opt, {2}, 0.1);
  multi.step();
  CosineAnnealingLR cosine(m.opt, 10);
  EXPECT_TRUE(throws_error([&] { cosine.load_state_dict(multi.state_dict()); },
                           {"CosineAnnealingLR.load_state_dict", "'MultiStepLR'"}));
  EXPECT_TRUE(throws_error([&] { cosine.load_state_dict({}); }, {"'lr_scheduler' is missing"}));
  EXPECT_TRUE(throws_error(
      [&] {
        cosine.load_state_dict({{"lr_scheduler", "{not json"}});
      },
      {"CosineAnnealingLR.load_state_dict", "malformed"}));
  EXPECT_TRUE(throws_error(
      [&] {
        cosine.load_state_dict(
            {{"lr_scheduler", R"({"type":"CosineAnnealingLR","last_step":3,"base_lrs":[0.1],)"
                              R"("options":{"T_max":10,"eta_min":0}})"}});
      },
      {"base lrs for 1 parameter groups", "has 2"}));
  EXPECT_TRUE(throws_error(
      [&] {
        cosine.load_state_dict(
            {{"lr_scheduler", R"({"type":"CosineAnnealingLR","last_step":3,)"
                              R"("base_lrs":[0.1,0.1],"options":{"T_max":0,"eta_min":0}})"}});
      },
      {"T_max must be > 0"}));
  EXPECT_EQ(cosine.last_step(), 0);  // every failed load left the scheduler as it was
  TwoGroups w;
  LinearWarmup warm(w.opt, nullptr, 3);
  TwoGroups w2;
  LinearWarmup warm_cos(w2.opt, std::make_unique<CosineAnnealingLR>(w2.opt, 10), 3);
  EXPECT_TRUE(
      throws_error([&] { warm_cos.load_state_dict(warm.state_dict()); }, {"wraps no schedule"}));
}

TEST(LRScheduler, BadArguments) {
  TwoGroups m;
  EXPECT_TRUE(throws_error([&] { MultiStepLR(m.opt, {-1}); }, {"MultiStepLR", "milestones"}));
  EXPECT_TRUE(throws_error([&] { MultiStepLR(m.opt, {1}, -0.5); }, {"MultiStepLR", "gamma"}));
  EXPECT_TRUE(throws_error([&] { CosineAnnealingLR(m.opt, 0); }, {"CosineAnnealingLR", "T_max"}));
  EXPECT_TRUE(throws_error([&] { CosineAnnealingLR(m.opt, 5, -1); }, {"eta_min"}));
  EXPECT_TRUE(throws_error([&] { OneCycleLR(m.opt, 0.1, 0); }, {"OneCycleLR", "total_steps"}));
  EXPECT_TRUE(throws_error([&] { OneCycleLR(m.opt, 0.1, 10, {.pct_start = 1.5}); },
                           {"OneCycleLR", "pct_start"}));
  EXPECT_TRUE(throws_error([&] { OneCycleLR(m.opt, 0.1, 10, {.div_factor = 0}); },
                           {"OneCycleLR", "div_factor"}));
  EXPECT_TRUE(throws_error(
      [&] {
        OneCycleLR(m.opt, std::vector<double>{0.1, 0.2, 0.3}, 10);
      },
      {"OneCycleLR", "1 or 2 max_lr", "got 3"}));
  // pct_start·total_steps = 1 puts step 0 at both ends of a zero-length phase (PyTorch:
  // ZeroDivisionError).
  EXPECT_TRUE(throws_error([&] { OneCycleLR(m.opt, 0.1, 10, {.pct_start = 0.1}); },
                           {"OneCycleLR", "zero length"}));
  EXPECT_TRUE(throws_error([&] { LinearWarmup(m.opt, nullptr, -1); }, {"warmup_steps"}));
  EXPECT_TRUE(throws_error([&] { LinearWarmup(m.opt, nullptr, 5, 1.5); }, {"start_factor"}));
  TwoGroups other;
  EXPECT_TRUE(throws_error(
      [&] { LinearWarmup(m.opt, std::make_unique<CosineAnnealingLR>(other.opt, 5), 2); },
      {"LinearWarmup", "another optimizer"}));
  auto used = std::make_unique<CosineAnnealingLR>(m.opt, 5);
  used->step();
  EXPECT_TRUE(throws_error([&] { LinearWarmup(m.opt, std::move(used), 2); },
                           {"LinearWarmup", "already taken 1 steps"}));
}

TEST(LRScheduler, ScaleLr) {
  EXPECT_DOUBLE_EQ(scale_lr(0.1, 4, LrScaling::linear), 0.4);
  EXPECT_DOUBLE_EQ(scale_lr(0.1, 4, LrScaling::none), 0.1);
  EXPECT_DOUBLE_EQ(scale_lr(0.1, 1, LrScaling::linear), 0.1);
  EXPECT_TRUE(
      throws_error([] { scale_lr(0.1, 0, LrScaling::linear); }, {"scale_lr", "world_size"}));
  EXPECT_TRUE(throws_error([] { scale_lr(-0.1, 2, LrScaling::none); }, {"scale_lr", "base_lr"}));
}

}  // namespace
}  // namespace rg
