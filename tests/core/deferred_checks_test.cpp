// Deferred checks (core/deferred_checks.h): what a GPU kernel's flag decides is checked when the
// host next waits for that device. The list itself needs no GPU: checks are host closures, filed
// under a device.
#include "core/deferred_checks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "core/error.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using testing::throws_error;

TEST(DeferredChecks, RunAllInOrderThenRethrowTheFirstError) {
  const Device gpu = Device::cuda(3), other = Device::cuda(4);
  std::vector<int> ran;
  defer_check(gpu, [&] { ran.push_back(1); });
  defer_check(gpu, [&] {
    ran.push_back(2);
    fail("nll_loss: target 7 is out of range");
  });
  defer_check(gpu, [&] {
    ran.push_back(3);
    fail("a later error");
  });
  defer_check(other, [&] { ran.push_back(4); });
  EXPECT_EQ(deferred_check_count(gpu), 3u);
  EXPECT_TRUE(throws_error([&] { run_deferred_checks(gpu); }, {"nll_loss", "target 7"}));
  EXPECT_EQ(ran, (std::vector<int>{1, 2, 3}));  // every check ran; the first error won
  EXPECT_EQ(deferred_check_count(gpu), 0u);     // and none is run twice
  EXPECT_NO_THROW(run_deferred_checks(gpu));
  EXPECT_EQ(deferred_check_count(other), 1u);  // another device's checks wait for it
  run_deferred_checks(other);
  EXPECT_EQ(ran.back(), 4);
}

TEST(DeferredChecks, ACheckThatReadsTheDeviceDoesNotRunItselfAgain) {
  const Device gpu = Device::cuda(5);
  int runs = 0;
  defer_check(gpu, [&] {
    ++runs;
    run_deferred_checks(gpu);  // what a check's own read back would trigger
  });
  run_deferred_checks(gpu);
  EXPECT_EQ(runs, 1);
}

TEST(DeferredChecks, ThreadsFileChecksConcurrently) {
  const Device gpu = Device::cuda(6);
  std::atomic<int> runs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) defer_check(gpu, [&] { ++runs; });
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(deferred_check_count(gpu), 400u);
  run_deferred_checks(gpu);
  EXPECT_EQ(runs.load(), 400);
}

}  // namespace
}  // namespace rg
