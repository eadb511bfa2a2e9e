// softmax and log_softmax's GPU kernels (ops/softmax/softmax_kernels.cuh) run through the emulator
// against the CPU kernels, forward and backward: every dtype, the last dim and a middle dim,
// lengths below, at and above the block size. Sums differ in order (a tree of floats against
// the CPU's doubles): device_parity_tolerance.
#include <gtest/gtest.h>

#include "ops/ops.h"
#include "ops/softmax/softmax_kernels.cuh"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;
using detail::SoftmaxKind;

Tensor values(const Shape& shape, DType dtype, double scale) {
  return mul(add(rand(shape, {DType::f64}), -0.5), 2 * scale).to(dtype);
}

struct Case {
  Shape shape;
  int64_t dim;
};

// Lanes along the last dim (shorter and longer than a block) and along a middle dim.
const Case kCases[] = {{{3, 37}, 1}, {{2, 150}, 1}, {{2, 5, 3}, 1}, {{1, 1}, 0}};

TEST(SoftmaxKernel, ForwardAndBackwardMatchTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (SoftmaxKind kind : {SoftmaxKind::softmax, SoftmaxKind::log_softmax})
      for (const Case& c : kCases) {
        const double tol = device_parity_tolerance(dtype);
        const Tensor x = values(c.shape, dtype, 8.0);  // large logits: the max shift matters
        const Tensor expected = detail::softmax_forward(OnCpu{}, x, c.dim, kind);
        const Tensor y = empty(c.shape, {dtype});
        launch_softmax(x, y, c.dim, kind, nullptr);
        EXPECT_TRUE(all_close(y, expected, tol, tol))
            << dtype << " " << shape_str(c.shape) << " dim " << c.dim;

        const Tensor gy = values(c.shape, dtype, 1.0);
        const Tensor expected_gx = detail::softmax_backward(OnCpu{}, gy, expected, c.dim, kind);
        const Tensor gx = empty(c.shape, {dtype});
        launch_softmax_backward(gy, expected, gx, c.dim, kind, nullptr);
        EXPECT_TRUE(all_close(gx, expected_gx, tol, tol))
            << "backward " << dtype << " " << shape_str(c.shape) << " dim " << c.dim;
      }
}

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
