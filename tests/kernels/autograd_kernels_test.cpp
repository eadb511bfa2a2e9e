// The autograd engine's CUDA kernels (core/cuda/accumulate_kernels.cuh, reduce_kernels.cuh) run
// through the emulator against the CPU engine: gradient accumulation and sum_to_shape.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/cuda/accumulate_kernels.cuh"
#include "core/cuda/reduce_kernels.cuh"
#include "ops/ops.h"
#include "ops/sum/sum_kernel.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

Tensor values(const Shape& shape, DType dtype) {
  return add(mul(rand(shape, {DType::f64}), 4.0), -2.0).to(dtype);
}

TEST(AccumulateKernel, MatchesTheCpuEngine) {
  for (DType dtype : kFloatingDtypes) {
    const Tensor acc = values({7, 53}, dtype);
    for (const Tensor& g : {values({7, 53}, dtype), values({53, 7}, dtype).transpose(0, 1)}) {
      const Tensor expected = acc.clone();
      add_inplace(expected, g);  // the CPU engine
      const Tensor actual = acc.clone();
      launch_accumulate(actual, g, nullptr);
      EXPECT_TRUE(all_close(actual, expected, 0, 0)) << dtype;
    }
  }
}

TEST(AccumulateKernel, StridedAccumulator) {
  const Tensor acc = values({9, 11}, DType::f32).transpose(0, 1);  // [11, 9], column-major
  const Tensor g = values({11, 9}, DType::f32);
  const Tensor expected = acc.contiguous();
  add_inplace(expected, g);
  launch_accumulate(acc, g, nullptr);
  EXPECT_TRUE(all_close(acc, expected, 0, 0));
}

// Small shapes: the emulator runs a block's threads (64 emulated) as OS threads, and each output of
// a reduction costs a dozen barriers. ScaleAndEmptyReductions covers reductions longer than a
// block.
TEST(SumKernel, SumToShapeMatchesTheCpuEngine) {
  const Shape from = {3, 4, 9};
  const std::vector<Shape> targets = {{4, 1}, {1, 9}, {3, 1, 1}, {}, {9}, {3, 4, 1}, {1, 4, 9}};
  for (DType dtype : kFloatingDtypes)
    for (const Shape& to : targets)
      for (bool transposed : {false, true}) {
        const Tensor grad =
            transposed ? values({9, 4, 3}, dtype).transpose(0, 2) : values(from, dtype);
        const Tensor expected = sum_to_shape(grad, to);  // CPU
        const int64_t lead = grad.dim() - static_cast<int64_t>(to.size());
        std::vector<bool> reduced(3, true);
        for (std::size_t d = 0; d < to.size(); ++d)
          reduced[d + lead] = to[d] != grad.shape()[d + lead];
        const Tensor actual = empty(to, {dtype});
        launch_sum("sum_to_shape", grad, reduced, actual, 1.0, nullptr);
        const double tol = device_parity_tolerance(dtype);
        EXPECT_TRUE(all_close(actual, expected, tol, tol))
            << dtype << " to " << shape_str(to) << (transposed ? " transposed" : "");
      }
}

TEST(SumKernel, ScaleAndEmptyReductions) {
  const Tensor x = values({4, 300}, DType::f64);
  Tensor actual = empty({4}, {DType::f64});
  launch_sum("mean", x, {false, true}, actual, 1.0 / 300, nullptr);
  EXPECT_TRUE(all_close(actual, mean(x, {1}), 1e-12, 1e-12));
  const Tensor nothing = empty({4, 0}, {DType::f32});
  actual = full({4}, 7.0, {DType::f32});
  launch_sum("sum", nothing, {false, true}, actual, 1.0, nullptr);
  EXPECT_TRUE(all_close(actual, zeros({4}), 0, 0));
}

TEST(SumKernel, MatchesTheSumAndMeanOps) {
  const Tensor x = values({3, 5, 7}, DType::f32).transpose(0, 2);  // [7, 5, 3], strided
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{0}, {1, 2}, {-1}})
    for (KeepDim keep : {KeepDim::no, KeepDim::yes}) {
      const detail::ReducePlan plan = detail::plan_reduce(x.shape(), dims, false, keep, "sum");
      const Tensor total = empty(plan.out_shape), average = empty(plan.out_shape);
      launch_sum("sum", x, plan.reduced, total, 1.0, nullptr);
      launch_sum("mean", x, plan.reduced, average, 1.0 / static_cast<double>(plan.count), nullptr);
      EXPECT_TRUE(all_close(total, sum(x, dims, keep), 1e-5, 1e-5));
      EXPECT_TRUE(all_close(average, mean(x, dims, keep), 1e-5, 1e-5));
    }
}

TEST(SumKernel, BadGeometryIsAClearError) {
  const Tensor x = values({4, 3}, DType::f32);
  EXPECT_TRUE(throws_error(
      [&] {
        launch_sum("sum", x, {false, true}, empty({3}), 1.0, nullptr);
      },
      {"sum", "does not hold the 4 kept elements"}));
}

}  // namespace
}  // namespace rg
