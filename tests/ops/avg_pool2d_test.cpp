#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of avg_pool2d are in its spec
// (ops/avg_pool2d/avg_pool2d_spec.cpp).

TEST(AvgPool2d, PaddingCountsOnlyWhenIncluded) {
  // A 2×2 of ones, kernel 3 with padding 1: the corner window sees 4 ones out of 9 cells.
  Tensor x = ones({1, 1, 2, 2});
  EXPECT_NEAR(avg_pool2d(x, 3, 1, 1, CeilMode::off, CountIncludePad::on).to_vector<double>()[0],
              4.0 / 9.0, 1e-6);
  EXPECT_NEAR(avg_pool2d(x, 3, 1, 1, CeilMode::off, CountIncludePad::off).to_vector<double>()[0],
              1.0, 1e-6);
  Tensor r = rand({2, 3, 6, 5}).transpose(2, 3);  // non-contiguous
  EXPECT_TRUE(all_close(avg_pool2d(r, 2), avg_pool2d(r.contiguous(), 2), 0, 0));
}

}  // namespace
}  // namespace rg
