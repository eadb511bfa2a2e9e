// max's GPU kernels (ops/max/max_kernels.cuh) run through the emulator against the CPU kernels:
// max(x) and max(x, dim) with their backward, every dtype, lanes as short rows (a thread per
// lane), long rows (a block per lane), strided lanes, ties and NaN. Maxima and indices are
// exact, so the results must be bit-identical.
#include <gtest/gtest.h>

#include <limits>

#include "ops/max/max_kernel.h"
#include "ops/max/max_kernels.cuh"
#include "ops/ops.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

// Values on a coarse grid (−1.5 to 1, steps of 0.5), so ties are common.
Tensor values_with_ties(const Shape& shape, DType dtype) {
  std::vector<double> v(static_cast<std::size_t>(numel_of(shape)));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<double>((i * 7919 + 13) % 6) / 2 - 1.5;
  return from_vector<double>(v, shape, {dtype});
}

struct Case {
  Shape shape;
  int64_t dim;
};

const Case kCases[] = {{{5, 7}, 1}, {{3, 300}, 1}, {{2, 5, 3}, 1}, {{4}, 0}, {{2, 3, 4}, 0}};

void expect_same_max_along(const Tensor& x, int64_t dim, const std::string& what) {
  Shape out_shape = x.shape();
  out_shape.erase(out_shape.begin() + dim);
  const MaxResult expected = detail::max_along(OnCpu{}, x, dim, out_shape);
  const MaxResult got{empty(out_shape, {x.dtype()}), empty(out_shape, {DType::i64})};
  launch_max_along(x, got.values, got.indices, lanes_around(x.shape(), dim), nullptr);
  EXPECT_TRUE(all_close(got.values, expected.values, 0, 0)) << what;
  EXPECT_EQ(got.indices.to_vector<int64_t>(), expected.indices.to_vector<int64_t>()) << what;

  const Tensor gy = rand(out_shape, {DType::f64}).to(x.dtype());
  const Tensor expected_gx =
      detail::max_along_backward(OnCpu{}, gy, expected.indices, x.shape(), dim);
  const Tensor gx = empty(x.shape(), {x.dtype()});
  launch_max_along_backward(gy, expected.indices, gx, lanes_around(x.shape(), dim), nullptr);
  EXPECT_TRUE(all_close(gx, expected_gx, 0, 0)) << "backward " << what;
}

void expect_same_max_all(const Tensor& x, const std::string& what) {
  const Tensor expected = detail::max_all(OnCpu{}, x);
  const Tensor got = empty({}, {x.dtype()});
  launch_max_all(x, got, nullptr);
  EXPECT_TRUE(all_close(got, expected, 0, 0)) << what;

  const Tensor gy = full({}, 0.75, {x.dtype()});
  const Tensor expected_gx = detail::max_all_backward(OnCpu{}, gy, x, expected);
  const Tensor gx = empty(x.shape(), {x.dtype()});
  launch_max_all_backward(gy, x, expected, gx, nullptr);
  EXPECT_TRUE(all_close(gx, expected_gx, 0, 0)) << "backward " << what;
}

TEST(MaxKernels, MatchTheCpuBitForBit) {
  for (DType dtype : kFloatingDtypes)
    for (const Case& c : kCases) {
      const Tensor x = values_with_ties(c.shape, dtype);
      const std::string what = std::string(dtype_name(dtype)) + " " + shape_str(c.shape);
      expect_same_max_along(x, c.dim, what + " dim " + std::to_string(c.dim));
      expect_same_max_all(x, what);
    }
}

TEST(MaxKernels, NanWinsAtItsFirstIndex) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const Shape& shape : {Shape{2, 9}, Shape{2, 300}}) {
    std::vector<double> v(static_cast<std::size_t>(numel_of(shape)), 1.0);
    v[3] = nan;
    v[5] = nan;
    v[v.size() - 2] = 7.0;  // larger, but row 1 has no NaN: it wins there
    v[v.size() - 1] = 7.0;  // a tie: the first index wins
    const Tensor x = from_vector<double>(v, shape, {DType::f32});
    expect_same_max_along(x, 1, "nan " + shape_str(shape));
    expect_same_max_all(x, "nan all " + shape_str(shape));
  }
}

}  // namespace
}  // namespace rg
