#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(AvgPool2d, GradcheckEveryOption) {
  for (CountIncludePad count : {CountIncludePad::on, CountIncludePad::off}) {
    auto check = [=](Shape shape, Pool2dSize k, Pool2dSize s, Pool2dSize p, CeilMode ceil) {
      return gradcheck(
          [=](const std::vector<Tensor>& in) { return avg_pool2d(in[0], k, s, p, ceil, count); },
          {grad_input(shape)});
    };
    SCOPED_TRACE(count == CountIncludePad::on ? "count_include_pad" : "exclude pad");
    EXPECT_TRUE(check({1, 2, 4, 4}, 2, {}, 0, CeilMode::off));
    EXPECT_TRUE(check({2, 1, 5, 5}, 3, 2, 1, CeilMode::off));
    EXPECT_TRUE(check({1, 1, 5, 6}, {2, 3}, {1, 2}, {1, 1}, CeilMode::off));
    EXPECT_TRUE(check({1, 1, 6, 6}, 3, 2, 1, CeilMode::on));  // last window clipped
  }
}

TEST(AvgPool2d, MatchesPyTorch) {
  struct Case {
    const char* name;
    Pool2dSize k, s, p;
    CeilMode ceil;
    CountIncludePad count;
  };
  const Case cases[] = {
      {"k2", 2, {}, 0, CeilMode::off, CountIncludePad::on},
      {"k3s2p1", 3, 2, 1, CeilMode::off, CountIncludePad::on},
      {"k3s2p1_exclude", 3, 2, 1, CeilMode::off, CountIncludePad::off},
      {"k3s2p1ceil", 3, 2, 1, CeilMode::on, CountIncludePad::on},
      {"k3s2p1ceil_exclude", 3, 2, 1, CeilMode::on, CountIncludePad::off},
      {"k2x3s1x2p1", {2, 3}, {1, 2}, {1, 1}, CeilMode::off, CountIncludePad::on},
  };
  Fixture f("avg_pool2d");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string n = c.name;
    Tensor x = f[n + ".x"].set_requires_grad(true);
    Tensor y = avg_pool2d(x, c.k, c.s, c.p, c.ceil, c.count);
    EXPECT_TRUE(all_close(y, f[n + ".y"]));
    y.backward(f[n + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[n + ".gx"]));
  }
}

TEST(AvgPool2d, PaddingCountsOnlyWhenIncluded) {
  // A 2×2 of ones, kernel 3 with padding 1: the corner window sees 4 ones out of 9 cells.
  Tensor x = ones({1, 1, 2, 2});
  EXPECT_NEAR(avg_pool2d(x, 3, 1, 1, CeilMode::off, CountIncludePad::on).to_vector<double>()[0],
              4.0 / 9.0, 1e-6);
  EXPECT_NEAR(avg_pool2d(x, 3, 1, 1, CeilMode::off, CountIncludePad::off).to_vector<double>()[0],
              1.0, 1e-6);
  Tensor r = rand({2, 3, 6, 5}).transpose(2, 3);  // non-contiguous
  EXPECT_TRUE(all_close(avg_pool2d(r, 2), avg_pool2d(r.contiguous(), 2), 0, 0));
}

TEST(AvgPool2d, BadInput) {
  EXPECT_TRUE(throws_error([] { avg_pool2d(ones({4, 4}), 2); }, {"avg_pool2d", "4-D", "[4, 4]"}));
  EXPECT_TRUE(throws_error(
      [] {
        avg_pool2d(ones({1, 1, 4, 4}, {DType::i64}), 2);
      },
      {"avg_pool2d", "[1, 1, 4, 4] i64 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        avg_pool2d(ones({1, 1, 2, 2}), 5, 1, 1);
      },
      {"avg_pool2d", "too small", "[1, 1, 2, 2] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        avg_pool2d(ones({1, 1, 8, 8}), 2, 1, 2);
      },
      {"avg_pool2d", "padding (2, 2)", "half of kernel_size (2, 2)"}));
  EXPECT_TRUE(throws_error(
      [] {
        avg_pool2d(ones({1, 1, 8, 8}), 2, 1, -1);
      },
      {"avg_pool2d", "padding must be non-negative"}));
}

}  // namespace
}  // namespace rg
