// The pooling and upsampling kernels split N·C planes over the threads: the result must not
// depend on the thread count (each plane is computed, and scattered into, by one task).
#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

// Forward output and input gradient of fn at x (sized so that the planes span many chunks).
std::pair<Tensor, Tensor> run(const std::function<Tensor(const Tensor&)>& fn, const Tensor& x0,
                              int threads) {
  const int previous = num_threads();
  set_num_threads(threads);
  Tensor x = x0.detach().clone().set_requires_grad(true);
  Tensor y = fn(x);
  y.backward(ones_like(y));
  set_num_threads(previous);
  return {y, x.grad()};
}

TEST(PoolThreads, ResultsDoNotDependOnTheThreadCount) {
  const Tensor x = randn({4, 96, 12, 12});
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> ops = {
      {"max_pool2d", [](const Tensor& t) { return max_pool2d(t, 3, 2, 1).output; }},
      {"avg_pool2d", [](const Tensor& t) { return avg_pool2d(t, 3, 1, 1); }},
      {"adaptive_avg_pool2d",
       [](const Tensor& t) {
         return adaptive_avg_pool2d(t, {5, 7});
       }},
      {"upsample nearest", [](const Tensor& t) { return upsample(t, 2); }},
      {"upsample bilinear", [](const Tensor& t) { return upsample(t, 2, UpsampleMode::bilinear); }},
  };
  for (const auto& [name, fn] : ops) {
    SCOPED_TRACE(name);
    auto [y1, g1] = run(fn, x, 1);
    auto [y4, g4] = run(fn, x, 4);
    EXPECT_TRUE(all_close(y4, y1, 0, 0));
    EXPECT_TRUE(all_close(g4, g1, 0, 0));
  }
  // Volumes: the 3-D kernels split the work by depth slices (forward) and volumes (trilinear
  // backward); one volume of 3 channels still spreads over the threads.
  const Tensor v = randn({1, 3, 7, 6, 5});
  for (UpsampleMode mode : {UpsampleMode::nearest, UpsampleMode::trilinear}) {
    auto fn = [mode](const Tensor& t) { return upsample(t, 2, mode); };
    auto [y1, g1] = run(fn, v, 1);
    auto [y4, g4] = run(fn, v, 4);
    EXPECT_TRUE(all_close(y4, y1, 0, 0));
    EXPECT_TRUE(all_close(g4, g1, 0, 0));
  }
}

}  // namespace
}  // namespace rg
