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

TEST(CrossEntropy, GradcheckEveryOption) {
  const Tensor t = targets({2, 0, -100, 3, 1}, {5});  // one ignored element
  const Tensor w = from_vector<double>({0.5, 1.5, 2.0, 0.7}, {4}, {DType::f64});
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
    for (double ls : {0.0, 0.25}) {
      for (bool weighted : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << reduction_name(r) << " ls " << ls << " w " << weighted);
        EXPECT_TRUE(gradcheck(
            [&](const std::vector<Tensor>& in) {
              return cross_entropy(in[0], t, weighted ? w : Tensor(), r, -100, ls);
            },
            {grad_input({5, 4}, -2, 2)}));
      }
    }
  }
  // ignore_index inside [0, C); (N, C, d) input; unbatched (C) input; non-contiguous logits.
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return cross_entropy(in[0], targets({2, 0, 2, 3, 1}, {5}), w, Reduction::mean, 2, 0.1);
      },
      {grad_input({5, 4})}));
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return cross_entropy(in[0], targets({1, -100, 3, 0, 2, 2}, {2, 3}), w, Reduction::mean,
                             -100, 0.2);
      },
      {grad_input({2, 4, 3})}));
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return cross_entropy(in[0], targets({3}, {}), w, Reduction::mean, -100, 0.3);
      },
      {grad_input({4})}));
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return cross_entropy(in[0].transpose(0, 1), targets({1, 0, 2}, {3}));
      },
      {grad_input({4, 3})}));
}

// The cross-entropy twin of Softmax.ARowGivesTheSameBitsWhereverItLies: both copies of a row
// (logits and target) give the same loss and gradient bits.
TEST(CrossEntropy, ARowGivesTheSameBitsWhereverItLies) {
  manual_seed(4);
  const Tensor x =
      randn({64, 1, 20}).expand({64, 2, 20}).reshape({128, 20}).set_requires_grad(true);
  std::vector<int64_t> t(128);
  for (std::size_t r = 0; r < 128; ++r) t[r] = static_cast<int64_t>(r / 2 % 20);
  const Tensor loss = cross_entropy(x, targets(t, {128}), Tensor(), Reduction::none, -100, 0.1);
  loss.backward(ones({128}));
  const std::vector<float> l = loss.to_vector<float>(), g = x.grad().to_vector<float>();
  for (std::size_t r = 0; r < 128; r += 2) {
    ASSERT_EQ(l[r + 1], l[r]) << "row " << r;
    for (std::size_t c = 0; c < 20; ++c)
      ASSERT_EQ(g[(r + 1) * 20 + c], g[r * 20 + c]) << "row " << r << " column " << c;
  }
}

TEST(CrossEntropy, MatchesPyTorch) {
  Fixture f("cross_entropy");
  struct Case {
    std::string name;
    Reduction reduction;
    double label_smoothing;
  };
  for (const Case& c : std::vector<Case>{{"mean", Reduction::mean, 0.0},
                                         {"sum", Reduction::sum, 0.0},
                                         {"none", Reduction::none, 0.0},
                                         {"w_mean", Reduction::mean, 0.0},
                                         {"ign_mean", Reduction::mean, 0.0},
                                         {"ls_mean", Reduction::mean, 0.1},
                                         {"ls_ign_mean", Reduction::mean, 0.2},
                                         {"lsw_mean", Reduction::mean, 0.2},
                                         {"lsw_sum", Reduction::sum, 0.3},
                                         {"lsw_none", Reduction::none, 0.15},
                                         {"nd_lsw_mean", Reduction::mean, 0.1},
                                         {"nd_none", Reduction::none, 0.0},
                                         {"unbatched", Reduction::mean, 0.1},
                                         {"big", Reduction::mean, 0.1}}) {
    SCOPED_TRACE(c.name);
    Tensor x = f[c.name + ".x"].set_requires_grad(true);
    const Tensor w = f.has(c.name + ".w") ? f[c.name + ".w"] : Tensor();
    Tensor y = cross_entropy(x, f[c.name + ".t"], w, c.reduction, -100, c.label_smoothing);
    EXPECT_TRUE(all_close(y, f[c.name + ".y"]));
    y.backward(f[c.name + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c.name + ".gx"]));
  }
}

// Without smoothing the fused op is nll_loss(log_softmax(x)) — checked on a large batch
// (several threads) and on an (N, C, H, W) input (the segment path), forward and backward.
TEST(CrossEntropy, LargeEqualsLogSoftmaxThenNll) {
  manual_seed(1);  // fixed data whatever ran before
  struct Case {
    Shape x, t;
  };
  for (const Case& c : {Case{{3000, 13}, {3000}}, Case{{4, 5, 40, 41}, {4, 40, 41}}}) {
    Tensor x = randn(c.x, {DType::f64});
    std::vector<int64_t> tv(numel_of(c.t));
    for (std::size_t i = 0; i < tv.size(); ++i) tv[i] = i % 17 == 0 ? -100 : (i * 7) % c.x[1];
    const Tensor t = targets(tv, c.t);
    const Tensor w = rand({c.x[1]}, {DType::f64});
    Tensor x1 = x.detach().set_requires_grad(true), x2 = x.detach().set_requires_grad(true);
    Tensor fused = cross_entropy(x1, t, w);
    Tensor composite = nll_loss(log_softmax(x2, 1), t, w);
    EXPECT_NEAR(fused.item(), composite.item(), 1e-12);
    fused.backward();
    composite.backward();
    EXPECT_TRUE(all_close(x1.grad(), x2.grad(), 1e-12, 1e-9));
  }
}

TEST(CrossEntropy, StableForHugeLogits) {
  Tensor x = from_vector<float>({1000, -1000, 0, 0, 1e4f, -1e4f}, {2, 3}).set_requires_grad(true);
  Tensor y = cross_entropy(x, targets({0, 2}, {2}), {}, Reduction::none, -100, 0.1);
  const std::vector<float> v = y.to_vector<float>();
  EXPECT_TRUE(std::isfinite(v[0]) && std::isfinite(v[1]));
  y.backward(ones({2}));
  for (float g : x.grad().to_vector<float>()) EXPECT_TRUE(std::isfinite(g));
}

TEST(CrossEntropy, HalfTypes) {
  manual_seed(2);  // fixed data whatever ran before
  Tensor x = randn({6, 5, 3});
  const Tensor t = targets({0, 1, 2, 3, 4, 0, 1, -100, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1}, {6, 3});
  for (DType dtype : {DType::f16, DType::bf16}) {
    Tensor xf = x.detach().set_requires_grad(true);
    Tensor xh = x.to(dtype).detach().set_requires_grad(true);
    Tensor yf = cross_entropy(xf, t, {}, Reduction::mean, -100, 0.1);
    Tensor yh = cross_entropy(xh, t, {}, Reduction::mean, -100, 0.1);
    EXPECT_EQ(yh.dtype(), dtype);
    EXPECT_NEAR(yh.item(), yf.item(), 2e-2);
    yf.backward();
    yh.backward();
    EXPECT_TRUE(all_close(xh.grad().to(DType::f32), xf.grad(), 2e-3, 2e-2));
  }
}

TEST(CrossEntropy, BadInput) {
  const Tensor x = zeros({3, 4});
  EXPECT_TRUE(throws_error(
      [&] {
        cross_entropy(x, zeros({3, 4}));
      },
      {"cross_entropy", "target must hold i64", "[3, 4] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        cross_entropy(x, targets({0, 1}, {2}));
      },
      {"cross_entropy", "[2] i64 cpu", "[3, 4] f32 cpu", "expected target shape [3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        cross_entropy(x, targets({0, 7, 1}, {3}));
      },
      {"cross_entropy", "target 7 is out of range", "C = 4"}));
  EXPECT_TRUE(throws_error(
      [&] {
        cross_entropy(x, targets({0, 1, 2}, {3}), ones({5}));
      },
      {"cross_entropy", "weight must have shape [4]", "[5] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        cross_entropy(x, targets({0, 1, 2}, {3}), {}, Reduction::mean, -100, 1.5);
      },
      {"cross_entropy", "label_smoothing", "1.5"}));
  EXPECT_TRUE(throws_error(
      [&] {
        cross_entropy(ones({3, 4}, {DType::i64}), targets({0, 1, 2}, {3}));
      },
      {"cross_entropy", "[3, 4] i64 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        cross_entropy(x, targets({0, 1, 2}, {3}), ones({4}, {DType::f64}));
      },
      {"cross_entropy", "dtype mismatch"}));
}

}  // namespace
}  // namespace rg
