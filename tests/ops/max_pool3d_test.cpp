#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks and bad inputs of max_pool3d are in its spec (ops/max_pool3d/max_pool3d_spec.cpp).

TEST(MaxPool3d, MatchesPyTorch) {
  struct Case {
    const char* name;
    Pool3dSize k, s, p, d;
  };
  const Case cases[] = {
      {"k2", 2, {}, 0, 1},
      {"k3s2p1", 3, 2, 1, 1},
      {"k3s1p1d2", 3, 1, 1, 2},
      {"k122s121p011", {1, 2, 2}, {1, 2, 1}, {0, 1, 1}, 1},
  };
  Fixture f("max_pool3d");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string n = c.name;
    Tensor x = f[n + ".x"].set_requires_grad(true);
    MaxPool3dResult r = max_pool3d(x, c.k, c.s, c.p, c.d);
    EXPECT_TRUE(all_close(r.output, f[n + ".y"]));
    EXPECT_EQ(r.indices.dtype(), DType::i64);
    EXPECT_EQ(r.indices.shape(), f[n + ".indices"].shape());
    EXPECT_EQ(r.indices.to_vector<int64_t>(), f[n + ".indices"].to_vector<int64_t>());
    r.output.backward(f[n + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[n + ".gx"]));
  }
}

TEST(MaxPool3d, TiesPickTheFirstAndNaNPropagates) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // One 2x2x2 window: ties at 3 (positions 1 and 6), then a NaN at position 5 in the second.
  Tensor x = from_vector<double>({1, 3, 2, 0, -1, -2, 3, 0}, {1, 1, 2, 2, 2});
  MaxPool3dResult r = max_pool3d(x, 2);
  EXPECT_EQ(r.indices.to_vector<int64_t>(), std::vector<int64_t>{1});
  EXPECT_EQ(r.output.to_vector<double>(), std::vector<double>{3});
  Tensor y = from_vector<double>({1, 3, 2, 0, -1, nan, 3, 0}, {1, 1, 2, 2, 2});
  MaxPool3dResult s = max_pool3d(y, 2);
  EXPECT_EQ(s.indices.to_vector<int64_t>(), std::vector<int64_t>{5});
  EXPECT_TRUE(std::isnan(s.output.to_vector<double>()[0]));
}

TEST(MaxPool3d, NonContiguousAndHalfMatchFloat) {
  Fixture f("max_pool3d");
  const Tensor x = f["k3s2p1.x"];
  const MaxPool3dResult ref = max_pool3d(x, 3, 2, 1);
  // A transposed copy transposed back: same values, non-contiguous strides.
  const Tensor strided = x.transpose(2, 4).contiguous().transpose(2, 4);
  EXPECT_TRUE(all_close(max_pool3d(strided, 3, 2, 1).output, ref.output, 0, 0));
  for (DType d : {DType::f16, DType::bf16}) {
    const MaxPool3dResult r = max_pool3d(x.to(d), 3, 2, 1);
    EXPECT_EQ(r.output.dtype(), d);
    // The max of rounded values is the rounded max.
    EXPECT_TRUE(all_close(r.output.to(DType::f32), ref.output.to(d).to(DType::f32), 0, 0));
  }
}

}  // namespace
}  // namespace rg
