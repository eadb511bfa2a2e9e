#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of log_softmax are in its spec
// (ops/log_softmax/log_softmax_spec.cpp).
TEST(LogSoftmax, FiniteWhereSoftmaxUnderflows) {
  // exp(−200) underflows f32 to 0, so log(softmax) would be −inf; log_softmax is exact.
  const std::vector<float> v =
      log_softmax(from_vector<float>({0, -200, 1000}, {3}), 0).to_vector<float>();
  EXPECT_FLOAT_EQ(v[0], -1000.0f);
  EXPECT_FLOAT_EQ(v[1], -1200.0f);
  EXPECT_FLOAT_EQ(v[2], 0.0f);
}

TEST(LogSoftmax, LargeMatchesLogOfSoftmax) {
  manual_seed(1);  // fixed data whatever ran before
  Tensor x = randn({64, 50, 33}, {DType::f64});
  for (int64_t dim : {0, 1, 2}) {
    std::vector<double> s = softmax(x, dim).to_vector<double>();
    for (double& v : s) v = std::log(v);
    EXPECT_TRUE(
        all_close(log_softmax(x, dim), from_vector(s, x.shape(), {DType::f64}), 1e-12, 1e-12));
  }
}

TEST(LogSoftmax, HalfTypes) {
  manual_seed(2);  // fixed data whatever ran before
  Tensor x = randn({6, 9}), gy = randn({6, 9});
  for (int64_t dim : {0, 1}) {
    Tensor xf = x.detach().set_requires_grad(true);
    Tensor xh = x.to(DType::bf16).detach().set_requires_grad(true);
    Tensor yf = log_softmax(xf, dim), yh = log_softmax(xh, dim);
    EXPECT_TRUE(all_close(yh.to(DType::f32), yf, 3e-2, 1e-2));
    yf.backward(gy);
    yh.backward(gy.to(DType::bf16));
    EXPECT_TRUE(all_close(xh.grad().to(DType::f32), xf.grad(), 3e-2, 2e-2));
  }
}

}  // namespace
}  // namespace rg
