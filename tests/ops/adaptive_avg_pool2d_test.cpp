#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(AdaptiveAvgPool2d, GradcheckDivisibleAndOverlappingBins) {
  auto check = [](Shape shape, Pool2dSize out) {
    return gradcheck([=](const std::vector<Tensor>& in) { return adaptive_avg_pool2d(in[0], out); },
                     {grad_input(shape)});
  };
  EXPECT_TRUE(check({1, 2, 4, 4}, 2));       // divisible
  EXPECT_TRUE(check({2, 1, 5, 7}, {3, 2}));  // non-divisible: overlapping bins
  EXPECT_TRUE(check({1, 2, 3, 3}, 1));       // global
  EXPECT_TRUE(check({1, 1, 2, 3}, {3, 4}));  // more bins than rows
}

TEST(AdaptiveAvgPool2d, MatchesPyTorch) {
  struct Case {
    const char* name;
    Pool2dSize out;
  };
  const Case cases[] = {{"7x5to3x2", {3, 2}}, {"global", 1}, {"8x8to4x4", 4}, {"3x3to5x4", {5, 4}}};
  Fixture f("adaptive_avg_pool2d");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string n = c.name;
    Tensor x = f[n + ".x"].set_requires_grad(true);
    Tensor y = adaptive_avg_pool2d(x, c.out);
    EXPECT_TRUE(all_close(y, f[n + ".y"]));
    y.backward(f[n + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[n + ".gx"]));
  }
}

TEST(AdaptiveAvgPool2d, BinsOverlapAsPyTorch) {
  // H = 3 into 2 bins: rows [0, 2) and [1, 3); the middle row is in both.
  Tensor x = from_vector<float>({1, 2, 4}, {1, 1, 3, 1});
  EXPECT_EQ(adaptive_avg_pool2d(x, {2, 1}).to_vector<float>(), (std::vector<float>{1.5f, 3.0f}));
  Tensor r = rand({2, 3, 7, 5}).transpose(2, 3);  // non-contiguous
  EXPECT_TRUE(all_close(adaptive_avg_pool2d(r, 3), adaptive_avg_pool2d(r.contiguous(), 3), 0, 0));
}

TEST(AdaptiveAvgPool2d, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        adaptive_avg_pool2d(ones({2, 4, 4}), 1);
      },
      {"adaptive_avg_pool2d", "4-D", "[2, 4, 4] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        adaptive_avg_pool2d(ones({1, 1, 4, 4}, {DType::u8}), 1);
      },
      {"adaptive_avg_pool2d", "[1, 1, 4, 4] u8 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        adaptive_avg_pool2d(ones({1, 1, 4, 4}), {0, 2});
      },
      {"adaptive_avg_pool2d", "output_size", "(0, 2)"}));
  EXPECT_TRUE(throws_error(
      [] {
        adaptive_avg_pool2d(ones({1, 1, 0, 4}), 1);
      },
      {"adaptive_avg_pool2d", "non-empty", "[1, 1, 0, 4]"}));
}

}  // namespace
}  // namespace rg
