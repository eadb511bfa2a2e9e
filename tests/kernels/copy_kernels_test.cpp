// The GPU copy kernel (core/cuda/copy_kernels.cuh) run through the emulator against the CPU copy:
// every dtype pair, contiguous and strided on either side. Conversions round exactly as the CPU's.
#include <gtest/gtest.h>

#include <limits>

#include "core/cuda/copy_kernels.cuh"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

constexpr DType kAll[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::u8};

TEST(CopyKernel, EveryDtypePairAndLayoutMatchesTheCpuCopy) {
  // Values in [0, 200): representable in u8, with fractions that the 16-bit types must round.
  const Tensor base = mul(rand({31, 17}, {DType::f64}), 200.0);
  for (DType from : kAll)
    for (DType to : kAll)
      for (bool strided_src : {false, true})
        for (bool strided_dst : {false, true}) {
          const Tensor src = strided_src ? base.to(from).transpose(0, 1)
                                         : base.transpose(0, 1).contiguous().to(from);
          const Tensor expected = empty({17, 31}, {to});
          copy_strided(expected, src);  // the CPU copy
          const Tensor actual =
              strided_dst ? empty({31, 17}, {to}).transpose(0, 1) : empty({17, 31}, {to});
          launch_copy(actual, src, nullptr);
          EXPECT_TRUE(all_close(actual.to(DType::f64), expected.to(DType::f64), 0, 0))
              << from << " -> " << to << (strided_src ? " strided src" : "")
              << (strided_dst ? " strided dst" : "");
        }
}

// Floats out of an integer type's range convert as on the CPU (core/dtype.h's convert: through
// int64, NaN and overflow to INT64_MIN), not as the device's own conversion would.
TEST(CopyKernel, OutOfRangeFloatsToIntegersMatchTheCpu) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor base =
      from_vector<double>({-2.7, -0.5, 300.7, 255.9, nan, 1e30, -1e30, -300.2}, {8}, {DType::f64});
  for (DType from : {DType::f64, DType::f32, DType::f16, DType::bf16})
    for (DType to : {DType::i64, DType::u8}) {
      const Tensor src = base.to(from);
      const Tensor expected = empty({8}, {to});
      copy_strided(expected, src);
      const Tensor actual = empty({8}, {to});
      launch_copy(actual, src, nullptr);
      EXPECT_TRUE(all_close(actual.to(DType::f64), expected.to(DType::f64), 0, 0))
          << from << " -> " << to;
    }
}

TEST(FillKernel, EveryDtypeMatchesTheCpuFill) {
  for (DType dtype : kAll) {
    const Tensor expected = empty({1037}, {dtype}), actual = empty({1037}, {dtype});
    fill_(expected, 3.7);  // the CPU fill, with its conversion
    launch_fill(actual.data_ptr(), dtype, actual.numel(), 3.7, nullptr);
    EXPECT_TRUE(all_close(actual.to(DType::f64), expected.to(DType::f64), 0, 0)) << dtype;
  }
}

TEST(CopyKernel, ShapeMismatchIsAClearError) {
  EXPECT_TRUE(throws_error(
      [] {
        launch_copy(empty({2, 3}), empty({3, 2}), nullptr);
      },
      {"copy", "shape mismatch"}));
}

}  // namespace
}  // namespace rg
