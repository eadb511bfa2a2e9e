// The CUDA pointwise kernel (ops/elementwise/elementwise_kernels.cuh) run through the emulator:
// the edges of its launch. Each functor a pointwise op launches is checked against the CPU loop
// by the op's spec (`kernels`: tests/support/op_spec_kernels.h, run by op_spec_kernels_test.cpp).
#include <gtest/gtest.h>

#include "core/tensor.h"
#include "ops/elementwise/elementwise_kernels.cuh"
#include "ops/relu/relu_functors.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(PointwiseKernel, EmptyTensorsLaunchNothing) {
  const Tensor x = empty({0, 3});
  const Tensor out = empty({0, 3});
  launch_pointwise("relu", ReluFn{}, out, nullptr, x);  // a launch of 0 blocks would be an error
}

TEST(PointwiseKernel, TooManyDimsIsAClearError) {
  // Nine dims, not contiguous (broadcast along the last): the strided kernel's geometry.
  const Tensor x = ones({1, 1, 1, 1, 1, 1, 1, 2, 1}).expand({1, 1, 1, 1, 1, 1, 1, 2, 3});
  EXPECT_TRUE(
      throws_error([&] { launch_pointwise("relu", ReluFn{}, empty(x.shape()), nullptr, x); },
                   {"relu", "at most 8 dims"}));
}

}  // namespace
}  // namespace rg
