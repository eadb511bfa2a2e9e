#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of pad are in its spec (ops/pad/pad_spec.cpp).

TEST(Pad, CroppedPastTheInputIsAllValueAndIntegersWork) {
  // Cropping 3 from the left of 2 elements and padding 2 on the right: nothing of x is left.
  const Tensor y = pad(from_vector<double>({1, 2}, {1, 2}), {-3, 3}, 7);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{7, 7}));
  const Tensor z = pad(from_vector<int64_t>({1, 2}, {2}, {DType::i64}), {1, 0}, 9);
  EXPECT_EQ(z.dtype(), DType::i64);
  EXPECT_EQ(z.to_vector<int64_t>(), (std::vector<int64_t>{9, 1, 2}));
}

TEST(Pad, EmptyPadIsACopy) {
  const Tensor x = from_vector<double>({1, 2, 3}, {3});
  const Tensor y = pad(x, {});
  EXPECT_EQ(y.to_vector<double>(), x.to_vector<double>());
}

}  // namespace
}  // namespace rg
