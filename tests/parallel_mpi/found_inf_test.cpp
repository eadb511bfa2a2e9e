// The loss scaler's found-inf exchange on MPI processes (tests/parallel/found_inf_test.cpp runs
// it on threads): only one rank overflows at a time, every rank skips, and every rank's report
// names that rank and its parameter — not a stale overflow of its own from an earlier step.
#include <gtest/gtest.h>

#include <limits>

#include "optim/sgd.h"
#include "parallel/found_inf.h"
#include "parallel/world.h"

namespace rg::parallel {
namespace {

TEST(MpiFoundInf, EveryRankNamesTheRankThatOverflowed) {
  const int me = rank(), last = size() - 1;
  Tensor w = ones({3}).set_requires_grad(true);
  Tensor b = ones({1}).set_requires_grad(true);
  Tensor c = ones({2}).set_requires_grad(true);
  SGD opt({w, b, c}, {.lr = 0.1});
  LossScaler scaler;
  scaler.set_param_names({"w", "b", "c"});
  sync_found_inf(scaler, world_ptr());
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::string> reports;
  // Step 1: rank 0 overflows in c. Step 2: the last rank overflows in b. Step 3: clean.
  for (int step = 0; step < 3; ++step) {
    const double s = scaler.scale_value();
    w.set_grad(full({3}, s));
    b.set_grad(step == 1 && me == last ? full({1}, inf) : full({1}, s));
    c.set_grad(step == 0 && me == 0 ? full({2}, inf) : full({2}, s));
    const Tensor before = w.detach().clone();
    const bool stepped = scaler.step(opt);
    scaler.update();
    EXPECT_EQ(stepped, step == 2);
    if (!stepped) {
      reports.push_back(describe_skip(*scaler.last_step()));
      EXPECT_EQ(w.to_vector<float>(), before.to_vector<float>());
    }
  }
  EXPECT_EQ(reports, (std::vector<std::string>{
                         "step 1: gradient overflow in c on rank 0, step skipped, loss scale now "
                         "32768",
                         "step 2: gradient overflow in b on rank " + std::to_string(last) +
                             ", step skipped, loss scale now 16384"}))
      << "on rank " << me;
  EXPECT_EQ(scaler.skipped_steps(), 2);
}

}  // namespace
}  // namespace rg::parallel
