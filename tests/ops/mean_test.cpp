#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of mean are in its spec (ops/mean/mean_spec.cpp).
TEST(Mean, LargeIsSumOverCount) {
  manual_seed(1);  // fixed data whatever ran before
  Tensor x = randn({48, 33, 65});
  EXPECT_NEAR(mean(x).item(), sum(x).item() / x.numel(), 1e-7);
  std::vector<double> s = sum(x, {0, 2}, KeepDim::yes).to_vector<double>();
  for (double& v : s) v /= 48 * 65;
  EXPECT_TRUE(all_close(mean(x, {0, 2}, KeepDim::yes), from_vector(s, {1, 33, 1})));
  // 1M copies of 0.1f: accumulated in double, the mean is 0.1f exactly.
  EXPECT_EQ(mean(full({1'000'000}, 0.1)).item(), double(0.1f));
}

TEST(Mean, EmptyIsNaN) {
  EXPECT_TRUE(std::isnan(mean(zeros({0})).item()));
  EXPECT_TRUE(std::isnan(mean(zeros({0, 2}), {0}).to_vector<double>()[1]));
  EXPECT_EQ(mean(zeros({2, 0}), {0}).shape(), Shape{0});
}

}  // namespace
}  // namespace rg
