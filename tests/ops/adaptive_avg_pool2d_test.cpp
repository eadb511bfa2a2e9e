#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of adaptive_avg_pool2d are in its spec
// (ops/adaptive_avg_pool2d/adaptive_avg_pool2d_spec.cpp).

TEST(AdaptiveAvgPool2d, BinsOverlapAsPyTorch) {
  // H = 3 into 2 bins: rows [0, 2) and [1, 3); the middle row is in both.
  Tensor x = from_vector<float>({1, 2, 4}, {1, 1, 3, 1});
  EXPECT_EQ(adaptive_avg_pool2d(x, {2, 1}).to_vector<float>(), (std::vector<float>{1.5f, 3.0f}));
  Tensor r = rand({2, 3, 7, 5}).transpose(2, 3);  // non-contiguous
  EXPECT_TRUE(all_close(adaptive_avg_pool2d(r, 3), adaptive_avg_pool2d(r.contiguous(), 3), 0, 0));
}

}  // namespace
}  // namespace rg
