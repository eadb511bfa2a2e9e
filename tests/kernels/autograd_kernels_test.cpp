// The autograd engine's CUDA kernels (core/cuda/accumulate_kernels.cuh, reduce_kernels.cuh) run
// through the emulator against the CPU engine: gradient accumulation and sum_to_shape.
#include <gtest/gtest.h>

#include <array>

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

// A convolution's bias gradient, Σ over (N, H, W) of (N, C, H, W): few outputs, many reduced
// elements, the sum launch_sum splits into parts (a block each) and then adds each output's
// parts in order. Odd sizes, parts that do not divide the range, more parts than a block has
// threads, the planned split (parts 0: two parts here, emulated) and channels-last strides; then
// reductions whose innermost row is shorter than a block (3x3 maps: a thread's walk moves several
// rows per step).
TEST(SumKernel, SplitSumsOfBiasGradientsMatchTheCpu) {
  struct Case {
    Shape shape;
    bool channels_last;
  };
  const Case cases[] = {{{6, 3, 31, 31}, false}, {{6, 3, 31, 31}, true}, {{37, 4, 3, 3}, false}};
  for (DType dtype : kFloatingDtypes)
    for (const Case& c : cases)
      // More parts than the 64 emulated threads of a block only in f32: each part is a block,
      // and the emulator pays for every barrier of every block.
      for (int64_t parts : {int64_t{0}, int64_t{7}, dtype == DType::f32 ? int64_t{70} : 3}) {
        const Tensor x = c.channels_last
                             ? values({c.shape[0], c.shape[2], c.shape[3], c.shape[1]}, dtype)
                                   .transpose(1, 3)
                                   .transpose(2, 3)  // (N, C, H, W), NHWC strides
                             : values(c.shape, dtype);
        const Tensor expected = sum(x, {0, 2, 3});  // CPU
        const Tensor actual = empty({c.shape[1]}, {dtype});
        launch_sum("sum", x, {true, false, true, true}, actual, 1.0, nullptr, parts);
        const double tol = device_parity_tolerance(dtype);
        EXPECT_TRUE(all_close(actual, expected, tol, tol))
            << dtype << " " << shape_str(c.shape) << (c.channels_last ? " channels-last" : "")
            << ", " << parts << " parts";
      }
}

TEST(SumKernel, SplitMeanOfEveryElementMatchesTheCpu) {
  const Tensor x = values({3, 1000}, DType::f64);
  Tensor actual = empty({}, {DType::f64});
  launch_sum("mean", x, {true, true}, actual, 1.0 / 3000, nullptr, 5);
  EXPECT_TRUE(all_close(actual, mean(x), 1e-12, 1e-12));
}

TEST(SumKernel, SplitsFillTheGpuOnlyForFewOutputs) {
  namespace rc = reduce_cuda;
  // airbench94's whitening bias gradient on a GPU: 24 outputs of 1024·31·31 elements, 4224 blocks
  // wanted (cuda::grid_for's cap), parts of at least 8·256 elements.
  const int64_t reduced = 1024 * 31 * 31;
  const rc::Split s = rc::split_for(24, reduced, 4224, 2048);
  EXPECT_GE(24 * s.parts, 4224);
  EXPECT_GE(s.chunk, 2048);
  EXPECT_GE(s.parts * s.chunk, reduced);                         // every element in a part
  EXPECT_LT((s.parts - 1) * s.chunk, reduced);                   // no part empty
  EXPECT_EQ(rc::split_for(4224, reduced, 4224, 2048).parts, 1);  // blocks enough already
  EXPECT_EQ(rc::split_for(24, 4095, 4224, 2048).parts, 1);       // too short to split
  EXPECT_EQ(rc::split_for(1, 3 * 2048, 4224, 2048).parts, 3);    // parts no shorter than 2048
  // split_in: equal parts but the last, none empty, never more than the elements.
  for (const auto& [n, parts, want_parts, want_chunk] : std::vector<std::array<int64_t, 4>>{
           {10, 4, 4, 3}, {9, 4, 3, 3}, {5, 9, 5, 1}, {0, 3, 1, 0}}) {
    const rc::Split split = rc::split_in(n, parts);
    EXPECT_EQ(split.parts, want_parts) << n << " in " << parts;
    EXPECT_EQ(split.chunk, want_chunk) << n << " in " << parts;
  }
}

TEST(SumKernel, BadGeometryIsAClearError) {
  const Tensor x = values({4, 3}, DType::f32);
  EXPECT_TRUE(throws_error(
      [&] {
        launch_sum("sum", x, {false, true}, empty({3}), 1.0, nullptr);
      },
      {"sum", "does not hold the 4 kept elements"}));
  EXPECT_TRUE(throws_error(
      [&] {
        launch_sum("sum", x, {false, true}, empty({4}), 1.0, nullptr, -1);
      },
      {"sum", "parts must be >= 0, got -1"}));
}

}  // namespace
}  // namespace rg
