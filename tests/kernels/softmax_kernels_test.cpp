// softmax's GPU kernels (ops/softmax/softmax_kernels.cuh) through the emulator on lanes of -inf
// and on empty tensors. Forward and backward of softmax and log_softmax against the CPU kernels,
// in every dtype, are the kernel check of softmax's spec (ops/softmax/softmax_spec.cpp).
#include <gtest/gtest.h>

#include "ops/ops.h"
#include "ops/softmax/softmax_kernels.cuh"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;
using detail::SoftmaxKind;

TEST(SoftmaxKernel, InfiniteAndEmptyLanes) {
  // A lane of -inf but one entry: softmax is one-hot there (the max shift avoids inf - inf).
  Tensor x = full({1, 5}, -std::numeric_limits<double>::infinity());
  x.data<float>()[2] = 1.f;
  const Tensor y = empty({1, 5});
  launch_softmax(x, y, 1, SoftmaxKind::softmax, nullptr);
  EXPECT_TRUE(all_close(y, from_vector<float>({0, 0, 1, 0, 0}, {1, 5}), 0, 0));
  launch_softmax(empty({0, 3}), empty({0, 3}), 1, SoftmaxKind::softmax, nullptr);  // no launch
}

}  // namespace
}  // namespace rg
