// max_pool3d's GPU kernels (ops/max_pool3d/max_pool3d_kernels.cuh) through the emulator against
// the CPU kernels, forward and backward, in every dtype: odd sizes, padding, overlapping windows
// (so the gathering backward sums several windows), dilation and anisotropic windows as the
// 3-D UNet uses ((1, 2, 2) pooling of thin volumes). Selection is exact; in f32 and f64 the
// gathering backward adds the CPU's terms in the CPU's order, so it is exact too (16-bit: one
// rounding against the CPU's rounding after every add, within device_parity_tolerance).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/max_pool3d/max_pool3d_kernels.cuh"
#include "ops/ops.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

Tensor values(const Shape& shape, DType dtype) {
  return add(mul(rand(shape, {DType::f64}), 4.0), -2.0).to(dtype);
}

double backward_tolerance(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 ? 0.0 : device_parity_tolerance(dtype);
}

struct WindowCase {
  Shape shape;
  Pool3dSize kernel, stride, padding, dilation;
};

const WindowCase kWindowCases[] = {
    {{2, 2, 5, 7, 6}, 3, 2, 1, 1},
    {{1, 3, 4, 6, 8}, 2, 0, 0, 1},
    {{1, 2, 3, 8, 7}, {1, 2, 2}, {1, 2, 2}, 0, 1},
    {{1, 1, 7, 6, 9}, {3, 2, 3}, {2, 1, 2}, {1, 0, 1}, {2, 3, 2}},
    {{2, 1, 3, 4, 5}, {3, 4, 5}, 1, 0, 1},
};

TEST(MaxPool3dKernel, ForwardAndBackwardMatchTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (const WindowCase& c : kWindowCases) {
      const Tensor x = values(c.shape, dtype);
      const Pool3dGeometry g =
          pool3d_geometry("test", x, c.kernel, c.stride, c.padding, c.dilation);
      const Shape out_shape{c.shape[0], c.shape[1], g.out[0], g.out[1], g.out[2]};
      const Tensor y_cpu = empty(out_shape, {dtype}), i_cpu = empty(out_shape, {DType::i64});
      const Tensor y = empty(out_shape, {dtype}), i = empty(out_shape, {DType::i64});
      detail::max_pool3d_forward(OnCpu{}, x, g, y_cpu, i_cpu);
      launch_max_pool3d(x, g, y, i, nullptr);
      EXPECT_TRUE(all_close(y, y_cpu, 0, 0)) << dtype << " " << shape_str(c.shape);
      EXPECT_TRUE(all_close(i, i_cpu, 0, 0)) << dtype << " " << shape_str(c.shape);

      const Tensor gy = values(out_shape, dtype);
      const Tensor gx_cpu = detail::max_pool3d_backward(OnCpu{}, gy, i_cpu, g);
      const Tensor gx = empty(c.shape, {dtype});
      launch_max_pool3d_backward(gy, i_cpu, g, gx, nullptr);
      const double tol = backward_tolerance(dtype);
      EXPECT_TRUE(all_close(gx, gx_cpu, tol, tol))
          << "backward " << dtype << " " << shape_str(c.shape);
    }
}

TEST(MaxPool3dKernel, TiesAndNaNAsTheCpu) {
  // Equal values: the first maximum in window order wins; a NaN wins over any number.
  Tensor x = zeros({1, 1, 3, 4, 4});
  x.data<float>()[21] = std::numeric_limits<float>::quiet_NaN();
  const Pool3dGeometry g = pool3d_geometry("test", x, 3, 1, 1, 1);
  const Shape out_shape{1, 1, 3, 4, 4};
  const Tensor y = empty(out_shape), i = empty(out_shape, {DType::i64});
  const Tensor y_cpu = empty(out_shape), i_cpu = empty(out_shape, {DType::i64});
  detail::max_pool3d_forward(OnCpu{}, x, g, y_cpu, i_cpu);
  launch_max_pool3d(x, g, y, i, nullptr);
  EXPECT_TRUE(all_close(i, i_cpu, 0, 0));
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  EXPECT_EQ(i.data<int64_t>()[0], 21);
}

}  // namespace
}  // namespace rg
