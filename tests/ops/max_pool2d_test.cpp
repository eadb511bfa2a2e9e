#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks and bad inputs of max_pool2d are in its spec (ops/max_pool2d/max_pool2d_spec.cpp).

TEST(MaxPool2d, MatchesPyTorch) {
  struct Case {
    const char* name;
    Pool2dSize k, s, p, d;
    CeilMode ceil;
  };
  const Case cases[] = {
      {"k2", 2, {}, 0, 1, CeilMode::off},
      {"k3s2p1", 3, 2, 1, 1, CeilMode::off},
      {"k3s1p1d2", 3, 1, 1, 2, CeilMode::off},
      {"k3s2ceil", 3, 2, 0, 1, CeilMode::on},
      {"k2x3s2x1p1", {2, 3}, {2, 1}, {1, 1}, 1, CeilMode::off},
      {"k3s2p1ceil", 3, 2, 1, 1, CeilMode::on},
  };
  Fixture f("max_pool2d");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string n = c.name;
    Tensor x = f[n + ".x"].set_requires_grad(true);
    MaxPool2dResult r = max_pool2d(x, c.k, c.s, c.p, c.d, c.ceil);
    EXPECT_TRUE(all_close(r.output, f[n + ".y"]));
    EXPECT_EQ(r.indices.dtype(), DType::i64);
    EXPECT_EQ(r.indices.shape(), f[n + ".indices"].shape());
    EXPECT_EQ(r.indices.to_vector<int64_t>(), f[n + ".indices"].to_vector<int64_t>());
    r.output.backward(f[n + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[n + ".gx"]));
  }
}

// The 2x2/2 pool has its own kernel (vectorised for f32, 16 outputs a step, then a scalar
// tail): wide rows with ragged ends, values drawn from a few levels (many ties) and some NaNs,
// against the rule written out — the first maximum of a window in row-major order wins, a NaN
// replaces the running maximum (so NaN propagates, with the last NaN's index).
TEST(MaxPool2d, TwoByTwoKernelFollowsTheRuleOnTiesAndNaN) {
  const int64_t n = 2, c = 3, h = 6, w = 2 * 37 + 1;  // 37 outputs a row: 2 vectors + 5
  std::vector<float> values(static_cast<std::size_t>(n * c * h * w));
  uint32_t state = 12345;
  for (float& v : values) {
    state = state * 1664525u + 1013904223u;
    const uint32_t r = state >> 24;
    v = r < 8 ? std::nanf("") : static_cast<float>(r % 4);  // 4 levels: ties everywhere
  }
  for (DType dt : {DType::f32, DType::f64, DType::f16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = from_vector(values, {n, c, h, w}).to(dt);
    const MaxPool2dResult r = max_pool2d(x, 2);
    const std::vector<float> y = r.output.to(DType::f32).to_vector<float>();
    const std::vector<int64_t> idx = r.indices.to_vector<int64_t>();
    const int64_t oh = h / 2, ow = w / 2;
    for (int64_t p = 0; p < n * c; ++p)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t best_i = 2 * i * w + 2 * j;
          float best = values[static_cast<std::size_t>(p * h * w + best_i)];
          for (int64_t k :
               {2 * i * w + 2 * j + 1, (2 * i + 1) * w + 2 * j, (2 * i + 1) * w + 2 * j + 1}) {
            const float v = values[static_cast<std::size_t>(p * h * w + k)];
            if (v > best || std::isnan(v)) {
              best = v;
              best_i = k;
            }
          }
          const std::size_t o = static_cast<std::size_t>((p * oh + i) * ow + j);
          ASSERT_EQ(idx[o], best_i) << "plane " << p << " output (" << i << ", " << j << ")";
          if (std::isnan(best))
            ASSERT_TRUE(std::isnan(y[o]));
          else
            ASSERT_EQ(y[o], best);
        }
  }
}

TEST(MaxPool2d, TiesPickTheFirstAndNonContiguousInput) {
  // All equal: PyTorch's index is the first element of each window in row-major order.
  MaxPool2dResult r = max_pool2d(ones({1, 1, 4, 4}), 2);
  EXPECT_EQ(r.indices.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 8, 10}));
  Tensor x = rand({2, 3, 5, 6});
  Tensor xt = x.transpose(2, 3);  // (2, 3, 6, 5), non-contiguous
  EXPECT_TRUE(
      all_close(max_pool2d(xt, 3, 2, 1).output, max_pool2d(xt.contiguous(), 3, 2, 1).output, 0, 0));
}

TEST(MaxPool2d, HalfMatchesFloat) {
  Tensor x = randn({1, 2, 6, 6}).to(DType::f16).to(DType::f32);  // values exact in f16
  Tensor y16 = max_pool2d(x.to(DType::f16), 3, 2, 1).output;
  EXPECT_EQ(y16.dtype(), DType::f16);
  EXPECT_TRUE(all_close(y16.to(DType::f32), max_pool2d(x, 3, 2, 1).output, 0, 0));
}

}  // namespace
}  // namespace rg
