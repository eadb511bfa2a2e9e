// The collectives' GPU steps (parallel/reduce_kernels.cuh) run through the emulator against the
// host loops of parallel/reduce.h: every dtype and op, bit for bit.
#include <gtest/gtest.h>

#include <cstring>

#include "ops/ops.h"
#include "parallel/reduce.h"
#include "parallel/reduce_kernels.cuh"
#include "tests/support/fixtures.h"

namespace rg::parallel {
namespace {
using namespace rg::testing;

constexpr DType kAll[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::u8};

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

// Values in [-50, 250) (u8 wraps them), with fractions the 16-bit types must round.
Tensor values(int64_t n, DType dtype) {
  return add(mul(rand({n}, {DType::f64}), 300.0), -50.0).to(dtype);
}

TEST(CollectiveKernels, CombineMatchesTheHostLoopBitForBit) {
  for (DType dtype : kAll)
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::average, ReduceOp::max, ReduceOp::min}) {
      const int64_t n = 1031;
      const Tensor acc = values(n, dtype), in = values(n, dtype);
      const Tensor expected = acc.clone(), actual = acc.clone();
      reduce_into(expected.data_ptr(), in.data_ptr(), n, dtype, op);
      launch_combine(actual.data_ptr(), in.data_ptr(), n, dtype, combine_of(op), nullptr);
      EXPECT_TRUE(same_bytes(actual, expected)) << dtype << " " << reduce_op_name(op);
      EXPECT_FALSE(same_bytes(actual, acc)) << "nothing was combined";
    }
}

TEST(CollectiveKernels, DivideMatchesTheHostLoopBitForBit) {
  for (DType dtype : kAll)
    for (int64_t divisor : {3, 300}) {
      const Tensor data = values(517, dtype);
      const Tensor expected = data.clone(), actual = data.clone();
      divide_by(expected.data_ptr(), 517, dtype, divisor);
      launch_divide(actual.data_ptr(), 517, dtype, divisor, nullptr);
      EXPECT_TRUE(same_bytes(actual, expected)) << dtype << " / " << divisor;
    }
}

}  // namespace
}  // namespace rg::parallel
