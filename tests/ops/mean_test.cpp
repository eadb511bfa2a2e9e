#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Mean, GradcheckAllDimsAndKeepdim) {
  auto check = [](const Shape& shape, std::vector<int64_t> dims, KeepDim keep) {
    return gradcheck([&](const std::vector<Tensor>& in) { return mean(in[0], dims, keep); },
                     {grad_input(shape)});
  };
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return mean(in[0]); },
                        {grad_input({2, 3, 2})}));
  EXPECT_TRUE(check({2, 3, 2}, {1}, KeepDim::no));
  EXPECT_TRUE(check({2, 3, 2}, {1}, KeepDim::yes));
  EXPECT_TRUE(check({2, 3, 2}, {0, 2}, KeepDim::yes));
  EXPECT_TRUE(check({2, 3, 2}, {-1}, KeepDim::no));
  EXPECT_TRUE(check({2, 2, 3, 2}, {1, -1}, KeepDim::no));
  EXPECT_TRUE(check({2, 2, 3, 2}, {0, 2, 3}, KeepDim::yes));
  EXPECT_TRUE(check({3, 2}, {0}, KeepDim::no));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return mean(in[0].transpose(0, 1), {1}); },
                {grad_input({3, 2})}));
}

TEST(Mean, MatchesPyTorch) {
  Fixture f("mean");
  struct Case {
    std::string name;
    std::vector<int64_t> dims;
    bool all;
    KeepDim keep;
  };
  const std::vector<Case> cases = {
      {"all", {}, true, KeepDim::no},        {"d1", {1}, false, KeepDim::no},
      {"d02k", {0, 2}, false, KeepDim::yes}, {"dneg", {-1}, false, KeepDim::no},
      {"d13", {1, 3}, false, KeepDim::no},   {"d023k", {0, -2, -1}, false, KeepDim::yes},
      {"d0", {0}, false, KeepDim::no}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = f[c.name + ".x"].set_requires_grad(true);
    Tensor y = c.all ? mean(x) : mean(x, c.dims, c.keep);
    EXPECT_TRUE(all_close(y, f[c.name + ".y"]));
    y.backward(f[c.name + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c.name + ".gx"]));
  }
  Tensor x = f["t.x"].set_requires_grad(true);
  Tensor y = mean(x.transpose(0, 1), {1});
  EXPECT_TRUE(all_close(y, f["t.y"]));
  y.backward(f["t.gy"]);
  EXPECT_TRUE(all_close(x.grad(), f["t.gx"]));
}

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

TEST(Mean, BadInput) {
  EXPECT_TRUE(throws_error([] { mean(ones({2, 3}), {5}); }, {"mean", "dim 5", "out of range"}));
  EXPECT_TRUE(throws_error(
      [] {
        mean(ones({2, 3}), {0, 0});
      },
      {"mean", "more than once", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { mean(ones({2}, {DType::i64})); }, {"mean", "[2] i64 cpu"}));
}

}  // namespace
}  // namespace rg
