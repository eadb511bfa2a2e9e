#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of cross_entropy are in its spec
// (ops/cross_entropy/cross_entropy_spec.cpp).

Tensor targets(std::vector<int64_t> v, const Shape& shape) {
  return from_vector(v, shape, {DType::i64});
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

}  // namespace
}  // namespace rg
