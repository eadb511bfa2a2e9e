#include "parallel/found_inf.h"

#include <gtest/gtest.h>

#include <limits>

#include "optim/sgd.h"
#include "parallel/thread_group.h"
#include "tests/support/fixtures.h"

namespace rg::parallel {
namespace {
using namespace rg::testing;

// Two ranks; only rank 1's gradient overflows. Both must skip the step, both must halve the
// scale, and neither's weights may change — then both step together again.
TEST(FoundInf, OneRankOverflowingMakesEveryRankSkip) {
  const int n = 2;
  auto groups = ThreadGroup::create(n);
  std::vector<double> scale(n), skipped(n);
  std::vector<bool> stepped(n), stepped_after(n);
  std::vector<std::vector<float>> weights(n);
  run_ranks(n, [&](int r) {
    Tensor w = ones({3}).set_requires_grad(true);
    SGD opt({w}, {.lr = 0.1});
    LossScaler scaler;
    sync_found_inf(scaler, groups[r]);
    const double s = scaler.scale_value();
    w.set_grad(r == 1 ? from_vector<double>({s, std::numeric_limits<double>::infinity(), s}, {3})
                      : full({3}, s));
    stepped[r] = scaler.step(opt);
    scaler.update();
    scale[r] = scaler.scale_value();
    skipped[r] = static_cast<double>(scaler.skipped_steps());
    weights[r] = w.to_vector<float>();
    w.set_grad(full({3}, scaler.scale_value()));  // a clean step on every rank
    stepped_after[r] = scaler.step(opt);
    scaler.update();
  });
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_FALSE(stepped[r]);
    EXPECT_EQ(scale[r], 32768.0);
    EXPECT_EQ(skipped[r], 1.0);
    EXPECT_EQ(weights[r], std::vector<float>(3, 1.0f));
    EXPECT_TRUE(stepped_after[r]);
  }
}

// The skip report names the rank whose gradient overflowed and that rank's parameter. Step 1:
// only rank 0 overflows, in "c". Step 2: only rank 1 overflows, in "b" — rank 0 must report
// "b on rank 1", not its own stale "c" of step 1 (what train_cifar printed before).
TEST(FoundInf, TheSkipReportNamesTheRankThatOverflowedAndItsParameter) {
  const int n = 2;
  auto groups = ThreadGroup::create(n);
  std::vector<std::vector<std::string>> reports(n);
  run_ranks(n, [&](int r) {
    Tensor w = ones({3}).set_requires_grad(true);
    Tensor b = ones({1}).set_requires_grad(true);
    Tensor c = ones({2}).set_requires_grad(true);
    SGD opt({w, b, c}, {.lr = 0.1});
    LossScaler scaler;
    scaler.set_param_names({"w", "b", "c"});
    sync_found_inf(scaler, groups[r]);
    const double inf = std::numeric_limits<double>::infinity();
    for (int step = 0; step < 3; ++step) {
      const double s = scaler.scale_value();
      w.set_grad(full({3}, s));
      b.set_grad(step == 1 && r == 1 ? full({1}, inf) : full({1}, s));
      c.set_grad(step == 0 && r == 0 ? full({2}, -inf) : full({2}, s));
      if (!scaler.step(opt)) reports[r].push_back("");
      scaler.update();
      if (scaler.last_step()->skipped) reports[r].back() = describe_skip(*scaler.last_step());
    }
  });
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(reports[r],
              (std::vector<std::string>{
                  "step 1: gradient overflow in c on rank 0, step skipped, loss scale now 32768",
                  "step 2: gradient overflow in b on rank 1, step skipped, loss scale now 16384"}));
  }
}

TEST(FoundInf, NullGroupIsAnError) {
  LossScaler scaler;
  EXPECT_TRUE(throws_error([&] { sync_found_inf(scaler, nullptr); }, {"sync_found_inf", "null"}));
}

}  // namespace
}  // namespace rg::parallel
