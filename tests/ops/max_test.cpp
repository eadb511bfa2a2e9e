#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/rng.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, bad inputs and PyTorch parity of max over all elements are in its spec
// (ops/max/max_spec.cpp); along a dim, the indices are checked too.
TEST(Max, AlongADimMatchesPyTorchIndicesIncluded) {
  Fixture f("max");
  struct Case {
    std::string name;
    int64_t dim;
    KeepDim keep;
  };
  for (const Case& c : std::vector<Case>{{"d1", 1, KeepDim::no},
                                         {"d0k", 0, KeepDim::yes},
                                         {"dneg", -1, KeepDim::no},
                                         {"d2k", 2, KeepDim::yes}}) {
    SCOPED_TRACE(c.name);
    Tensor x = f[c.name + ".x"].set_requires_grad(true);
    MaxResult r = max(x, c.dim, c.keep);
    EXPECT_TRUE(all_close(r.values, f[c.name + ".values"]));
    EXPECT_EQ(r.indices.dtype(), DType::i64);
    EXPECT_EQ(r.indices.shape(), f[c.name + ".indices"].shape());
    EXPECT_EQ(r.indices.to_vector<int64_t>(), f[c.name + ".indices"].to_vector<int64_t>());
    EXPECT_FALSE(r.indices.requires_grad());
    r.values.backward(f[c.name + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c.name + ".gx"]));
  }
}

TEST(Max, TiesPickTheFirstAndNaNPropagates) {
  Tensor x = from_vector<float>({1, 3, 3, 2, 2, 0}, {2, 3}).set_requires_grad(true);
  MaxResult r = max(x, 1);
  EXPECT_EQ(r.indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  r.values.backward(ones({2}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0, 1, 0, 1, 0, 0}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor y = from_vector<float>({1, nan, 3, nan, 0, 5}, {2, 3});
  r = max(y, 1);
  EXPECT_TRUE(std::isnan(r.values.to_vector<float>()[0]));
  EXPECT_TRUE(std::isnan(r.values.to_vector<float>()[1]));
  EXPECT_EQ(r.indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(std::isnan(max(y).item()));
}

TEST(Max, LargeMatchesPlainLoop) {
  manual_seed(1);  // fixed data whatever ran before
  const int64_t a = 300, b = 257;
  Tensor x = randn({a, b});
  const std::vector<float> v = x.to_vector<float>();
  std::vector<float> row_max(a, -INFINITY), col_max(b, -INFINITY);
  std::vector<int64_t> row_arg(a, 0), col_arg(b, 0);
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j) {
      const float e = v[i * b + j];
      if (e > row_max[i]) row_max[i] = e, row_arg[i] = j;
      if (e > col_max[j]) col_max[j] = e, col_arg[j] = i;
    }
  MaxResult rows = max(x, 1), cols = max(x, 0);
  EXPECT_EQ(rows.values.to_vector<float>(), row_max);
  EXPECT_EQ(rows.indices.to_vector<int64_t>(), row_arg);
  EXPECT_EQ(cols.values.to_vector<float>(), col_max);
  EXPECT_EQ(cols.indices.to_vector<int64_t>(), col_arg);
  EXPECT_EQ(max(x).item(), *std::max_element(row_max.begin(), row_max.end()));
}

TEST(Max, HalfTypes) {
  manual_seed(2);  // fixed data whatever ran before
  Tensor x = randn({7, 40});
  for (int64_t dim : {0, 1}) {
    MaxResult f = max(x, dim), h = max(x.to(DType::f16), dim);
    EXPECT_EQ(h.indices.to_vector<int64_t>(), f.indices.to_vector<int64_t>());
    EXPECT_TRUE(all_close(h.values.to(DType::f32), f.values, 2e-3, 1e-3));
  }
  EXPECT_NEAR(max(x.to(DType::bf16)).item(), max(x).item(), 2e-2);
}

}  // namespace
}  // namespace rg
