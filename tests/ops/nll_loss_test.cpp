#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

Tensor targets(std::vector<int64_t> v, const Shape& shape) {
  return from_vector(v, shape, {DType::i64});
}

TEST(NllLoss, GradcheckEveryOption) {
  const Tensor t = targets({2, 0, -100, 3, 1}, {5});  // one ignored element
  const Tensor w = from_vector<double>({0.5, 1.5, 2.0, 0.7}, {4}, {DType::f64});
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
    SCOPED_TRACE(reduction_name(r));
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return nll_loss(in[0], t, {}, r); },
                          {grad_input({5, 4})}));
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return nll_loss(in[0], t, w, r); },
                          {grad_input({5, 4})}));
  }
  // ignore_index inside [0, C); (N, C, d) input; unbatched (C) input.
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return nll_loss(in[0], targets({2, 0, 2, 3, 1}, {5}), w, Reduction::mean, 2);
      },
      {grad_input({5, 4})}));
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return nll_loss(in[0], targets({1, -100, 3, 0, 2, 2}, {2, 3}), w);
      },
      {grad_input({2, 4, 3})}));
  EXPECT_TRUE(
      gradcheck([&](const std::vector<Tensor>& in) { return nll_loss(in[0], targets({3}, {}), w); },
                {grad_input({4})}));
}

TEST(NllLoss, MatchesPyTorch) {
  Fixture f("nll_loss");
  struct Case {
    std::string name;
    Reduction reduction;
    int64_t ignore_index;
  };
  for (const Case& c : std::vector<Case>{{"mean", Reduction::mean, -100},
                                         {"sum", Reduction::sum, -100},
                                         {"none", Reduction::none, -100},
                                         {"w_mean", Reduction::mean, -100},
                                         {"ign_mean", Reduction::mean, -100},
                                         {"ign_none", Reduction::none, -100},
                                         {"ign1_sum", Reduction::sum, 1},
                                         {"nd_mean", Reduction::mean, -100},
                                         {"nd_none", Reduction::none, -100},
                                         {"unbatched", Reduction::mean, -100}}) {
    SCOPED_TRACE(c.name);
    Tensor x = f[c.name + ".x"].set_requires_grad(true);
    const Tensor w = f.has(c.name + ".w") ? f[c.name + ".w"] : Tensor();
    Tensor y = nll_loss(x, f[c.name + ".t"], w, c.reduction, c.ignore_index);
    EXPECT_TRUE(all_close(y, f[c.name + ".y"]));
    y.backward(f[c.name + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c.name + ".gx"]));
  }
}

TEST(NllLoss, LargeAndAllIgnored) {
  manual_seed(1);  // fixed data whatever ran before
  // Many lanes (several threads) against a plain loop.
  const int64_t n = 20000, c = 7;
  Tensor x = randn({n, c});
  std::vector<int64_t> tv(n);
  for (int64_t i = 0; i < n; ++i) tv[i] = i % 11 == 0 ? -100 : (i * 5) % c;
  const std::vector<float> xv = x.to_vector<float>();
  double total = 0, count = 0;
  for (int64_t i = 0; i < n; ++i)
    if (tv[i] >= 0) total -= xv[i * c + tv[i]], count += 1;
  EXPECT_NEAR(nll_loss(x, targets(tv, {n})).item(), total / count, 1e-6);
  EXPECT_NEAR(nll_loss(x, targets(tv, {n}), {}, Reduction::sum).item(), total, 1e-6 * n);
  // Every target ignored: the mean is 0/0, NaN as in PyTorch; the gradient is 0.
  Tensor z = zeros({2, 3}).set_requires_grad(true);
  Tensor y = nll_loss(z, targets({-100, -100}, {2}));
  EXPECT_TRUE(std::isnan(y.item()));
  y.backward();
  EXPECT_TRUE(all_close(z.grad(), zeros({2, 3})));
}

TEST(NllLoss, BadInput) {
  const Tensor x = zeros({3, 4});
  EXPECT_TRUE(throws_error([&] { nll_loss(x, zeros({3})); },
                           {"nll_loss", "target must hold i64", "[3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nll_loss(x, targets({0, 1}, {2}));
      },
      {"nll_loss", "[2] i64 cpu", "[3, 4] f32 cpu", "expected target shape [3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nll_loss(zeros({2, 4, 5}), targets({0, 1}, {2}));
      },
      {"nll_loss", "expected target shape [2, 5]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nll_loss(x, targets({0, 4, 1}, {3}));
      },
      {"nll_loss", "target 4 is out of range", "C = 4"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nll_loss(x, targets({0, -1, 1}, {3}));
      },
      {"nll_loss", "target -1 is out of range", "ignore_index -100"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nll_loss(x, targets({0, 1, 2}, {3}), ones({3}));
      },
      {"nll_loss", "weight must have shape [4]", "[3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nll_loss(x, targets({0, 1, 2}, {3}), ones({4}, {DType::f64}));
      },
      {"nll_loss", "dtype mismatch", "[4] f64 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nll_loss(ones({3, 4}, {DType::i64}), targets({0, 1, 2}, {3}));
      },
      {"nll_loss", "[3, 4] i64 cpu"}));
  EXPECT_TRUE(throws_error([&] { nll_loss(scalar_tensor(1.0), targets({0}, {})); },
                           {"nll_loss", "(N, C, ...) or (C)"}));
}

}  // namespace
}  // namespace rg
