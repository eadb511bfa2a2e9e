// dropout's random stream (Philox, one draw per call) is not PyTorch's, so there is no PyTorch
// fixture: the tests check the scaling, the kept fraction, mask/gradient consistency and that
// the mask depends on the seed and draw only — not on the thread count.
#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks and bad inputs of dropout are in its spec (ops/dropout/dropout_spec.cpp).

TEST(Dropout, KeepsAboutOneMinusPAndScalesKept) {
  const double p = 0.3;
  Generator g(7);
  const Tensor x = full({1 << 18}, 2.0);
  const std::vector<float> y = dropout(x, p, DropoutMode::train, g).to_vector<float>();
  int64_t kept = 0;
  for (float v : y) {
    if (v != 0) {
      ++kept;
      EXPECT_FLOAT_EQ(v, static_cast<float>(2.0 / (1 - p)));
    }
  }
  // Binomial: std of the kept fraction is sqrt(p(1−p)/n) ≈ 9e-4; allow 5 std.
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(y.size()), 1 - p, 5e-3);
}

TEST(Dropout, GradientUsesTheForwardMask) {
  Generator g(3);
  Tensor x = rand({1000}, {DType::f64}).set_requires_grad(true);
  Tensor y = dropout(x, 0.4, DropoutMode::train, g);
  const Tensor gy = rand({1000}, {DType::f64});
  y.backward(gy);
  const std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>(),
                            gv = gy.to_vector<double>(), gx = x.grad().to_vector<double>();
  for (std::size_t i = 0; i < xv.size(); ++i) {
    const bool kept = yv[i] != 0;
    EXPECT_DOUBLE_EQ(yv[i], kept ? xv[i] / 0.6 : 0.0);
    EXPECT_DOUBLE_EQ(gx[i], kept ? gv[i] / 0.6 : 0.0);
  }
}

TEST(Dropout, SameMaskOnAnyThreadCountAndNewMaskPerDraw) {
  const Tensor x = ones({100000});
  const int before = num_threads();
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Generator g(11);
    results.push_back(dropout(x, 0.5, DropoutMode::train, g).to_vector<float>());
  }
  set_num_threads(before);
  EXPECT_EQ(results[0], results[1]);
  Generator g(11);
  dropout(x, 0.5, DropoutMode::train, g);
  EXPECT_NE(dropout(x, 0.5, DropoutMode::train, g).to_vector<float>(), results[0]);
}

TEST(Dropout, EdgeProbabilitiesAndEval) {
  const Tensor x = rand({3, 4});
  EXPECT_TRUE(all_close(dropout(x, 0.0, DropoutMode::train), x, 0, 0));
  EXPECT_TRUE(all_close(dropout(x, 1.0, DropoutMode::train), zeros({3, 4}), 0, 0));
  EXPECT_TRUE(dropout(x, 0.7, DropoutMode::eval).same_as(x));
  // Non-contiguous input: element i is the i-th in row-major order of the view.
  Generator g1(5), g2(5);
  const Tensor xt = x.transpose(0, 1);
  EXPECT_TRUE(all_close(dropout(xt, 0.5, DropoutMode::train, g1),
                        dropout(xt.contiguous(), 0.5, DropoutMode::train, g2), 0, 0));
}

TEST(Dropout, HalfPrecision) {
  Generator g1(9), g2(9);
  const Tensor x = rand({64});
  const Tensor y = dropout(x.to(DType::bf16), 0.5, DropoutMode::train, g1);
  EXPECT_EQ(y.dtype(), DType::bf16);
  EXPECT_TRUE(all_close(y, dropout(x, 0.5, DropoutMode::train, g2), 0.02, 0.01));
}

}  // namespace
}  // namespace rg
