#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of nll_loss are in its spec
// (ops/nll_loss/nll_loss_spec.cpp).

Tensor targets(std::vector<int64_t> v, const Shape& shape) {
  return from_vector(v, shape, {DType::i64});
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

}  // namespace
}  // namespace rg
