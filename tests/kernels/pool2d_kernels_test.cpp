// The pooling kernels on the GPU (max_pool2d, avg_pool2d, adaptive_avg_pool2d: ops/*/
// *_kernels.cuh) through the emulator against the CPU kernels, forward and backward, in every
// dtype, with odd sizes, padding, strides smaller than the kernel (overlapping windows, so the
// gathering backward sums several windows), dilation and ceil mode. Max pooling selects, so its
// outputs and indices are exact; the backward kernels gather the very terms the CPU scatters, in
// the same order, so in f32 and f64 they are exact too (16-bit: one rounding against the CPU's
// rounding after every add, within device_parity_tolerance).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "ops/adaptive_avg_pool2d/adaptive_avg_pool2d_kernels.cuh"
#include "ops/avg_pool2d/avg_pool2d_kernels.cuh"
#include "ops/max_pool2d/max_pool2d_kernels.cuh"
#include "ops/ops.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

Tensor values(const Shape& shape, DType dtype) {
  return add(mul(rand(shape, {DType::f64}), 4.0), -2.0).to(dtype);
}

// Exact in f32/f64, where the GPU adds the CPU's terms in the CPU's order.
double backward_tolerance(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 ? 0.0 : device_parity_tolerance(dtype);
}

struct WindowCase {
  Shape shape;
  Pool2dSize kernel, stride, padding, dilation;
  CeilMode ceil;
};

// Overlapping windows with padding; 2x2/2 (the CPU's own fast path); dilation with a
// rectangular kernel; ceil mode with a partial last window; a window as large as the input.
const WindowCase kWindowCases[] = {
    {{2, 3, 7, 9}, 3, 2, 1, 1, CeilMode::off},
    {{1, 2, 8, 6}, 2, 2, 0, 1, CeilMode::off},
    {{1, 2, 9, 8}, {3, 2}, {1, 2}, {1, 0}, {2, 3}, CeilMode::off},
    {{2, 1, 6, 7}, 3, 2, 1, 1, CeilMode::on},
    {{1, 1, 5, 4}, {5, 4}, 1, 0, 1, CeilMode::off},
};

TEST(MaxPool2dKernel, ForwardAndBackwardMatchTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (const WindowCase& c : kWindowCases) {
      const Tensor x = values(c.shape, dtype);
      const Pool2dGeometry g =
          pool2d_geometry("test", x, c.kernel, c.stride, c.padding, c.dilation, c.ceil);
      const Shape out_shape{g.n, g.c, g.oh, g.ow};
      const Tensor y_cpu = empty(out_shape, {dtype}), i_cpu = empty(out_shape, {DType::i64});
      const Tensor y = empty(out_shape, {dtype}), i = empty(out_shape, {DType::i64});
      detail::max_pool2d_forward(OnCpu{}, x, g, y_cpu, i_cpu);
      launch_max_pool2d(x, g, y, i, nullptr);
      EXPECT_TRUE(all_close(y, y_cpu, 0, 0)) << dtype << " " << shape_str(c.shape);
      EXPECT_TRUE(all_close(i, i_cpu, 0, 0)) << dtype << " " << shape_str(c.shape);

      const Tensor gy = values(out_shape, dtype);
      const Tensor gx_cpu = detail::max_pool2d_backward(OnCpu{}, gy, i_cpu, g);
      const Tensor gx = empty(c.shape, {dtype});
      launch_max_pool2d_backward(gy, i_cpu, g, gx, nullptr);
      const double tol = backward_tolerance(dtype);
      EXPECT_TRUE(all_close(gx, gx_cpu, tol, tol))
          << "backward " << dtype << " " << shape_str(c.shape);
    }
}

TEST(MaxPool2dKernel, TiesAndNaNAsTheCpu) {
  // Equal values: the first maximum in window order wins; a NaN wins over any number.
  Tensor x = zeros({1, 1, 4, 4});
  x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  const Pool2dGeometry g = pool2d_geometry("test", x, 3, 1, 1, 1, CeilMode::off);
  const Tensor y = empty({1, 1, 4, 4}), i = empty({1, 1, 4, 4}, {DType::i64});
  const Tensor y_cpu = empty({1, 1, 4, 4}), i_cpu = empty({1, 1, 4, 4}, {DType::i64});
  detail::max_pool2d_forward(OnCpu{}, x, g, y_cpu, i_cpu);
  launch_max_pool2d(x, g, y, i, nullptr);
  EXPECT_TRUE(all_close(i, i_cpu, 0, 0));
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
}

// Raw bytes, so that −0 against +0 and NaN payloads count.
bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0;
}

// Windows that never overlap (kernel == stride) take the thread-per-window backward: airbench's
// 2x2 pool on odd sizes (the last row and column belong to no window), airbench94's last pool (a
// 3x3 map to 1x1), a rectangular window with padding and a partial last window (ceil mode), and
// a window as large as the input. Inputs of few distinct values (ties everywhere) and a NaN; a
// gradient holding −0 (the CPU's 0 + −0 is +0) and NaN; gx filled beforehand, so an element the
// kernel skipped would show.
TEST(MaxPool2dKernel, DisjointWindowsBackwardIsTheCpusBitForBit) {
  const WindowCase cases[] = {
      {{2, 3, 31, 31}, 2, 2, 0, 1, CeilMode::off},
      {{2, 3, 3, 3}, 3, 3, 0, 1, CeilMode::off},
      {{1, 2, 9, 8}, {2, 3}, {2, 3}, 1, 1, CeilMode::on},
      {{1, 2, 7, 5}, 3, 3, 1, 1, CeilMode::off},
      {{2, 2, 5, 6}, {5, 6}, {5, 6}, 0, 1, CeilMode::off},
  };
  for (DType dtype : kFloatingDtypes)
    for (const WindowCase& c : cases) {
      const std::string what = std::string(dtype_name(dtype)) + " " + shape_str(c.shape);
      Tensor x = values(c.shape, DType::f64);
      double* xd = x.data<double>();
      for (int64_t k = 0; k < x.numel(); ++k) xd[k] = std::floor(xd[k] * 1.5);  // ties: [-3, 3)
      xd[7] = std::numeric_limits<double>::quiet_NaN();
      x = x.to(dtype);
      const Pool2dGeometry g =
          pool2d_geometry("test", x, c.kernel, c.stride, c.padding, c.dilation, c.ceil);
      ASSERT_TRUE(max_pool2d_cuda::takes_disjoint_windows(g)) << what;
      const Shape out_shape{g.n, g.c, g.oh, g.ow};
      const Tensor y_cpu = empty(out_shape, {dtype}), i_cpu = empty(out_shape, {DType::i64});
      const Tensor y = empty(out_shape, {dtype}), i = empty(out_shape, {DType::i64});
      detail::max_pool2d_forward(OnCpu{}, x, g, y_cpu, i_cpu);
      launch_max_pool2d(x, g, y, i, nullptr);
      EXPECT_TRUE(same_bits(i, i_cpu)) << what;

      Tensor gy = values(out_shape, DType::f64);
      gy.data<double>()[0] = -0.0;
      gy.data<double>()[gy.numel() - 1] = std::numeric_limits<double>::quiet_NaN();
      gy = gy.to(dtype);
      const Tensor gx_cpu = detail::max_pool2d_backward(OnCpu{}, gy, i_cpu, g);
      const Tensor gx = full(c.shape, 7.0, {dtype});
      launch_max_pool2d_backward(gy, i_cpu, g, gx, nullptr);
      EXPECT_TRUE(same_bits(gx, gx_cpu)) << "backward " << what;
    }
}

TEST(MaxPool2dKernel, OnlyDisjointWindowsTakeTheThreadPerWindowBackward) {
  const Tensor x = zeros({1, 1, 9, 9});
  const auto takes = [&](Pool2dSize k, Pool2dSize s, Pool2dSize d) {
    return max_pool2d_cuda::takes_disjoint_windows(
        pool2d_geometry("test", x, k, s, 0, d, CeilMode::off));
  };
  EXPECT_TRUE(takes(2, 2, 1));
  EXPECT_TRUE(takes({2, 3}, {2, 3}, 1));
  EXPECT_FALSE(takes(3, 2, 1));  // overlapping
  EXPECT_FALSE(takes(2, 3, 1));  // gaps between windows
  EXPECT_FALSE(takes({2, 3}, {3, 2}, 1));
  EXPECT_FALSE(takes(2, 2, 2));  // dilated: windows interleave
  // Past 32-bit indices: the general kernel, whose indices are 64-bit.
  Pool2dGeometry huge = pool2d_geometry("test", x, 2, 2, 0, 1, CeilMode::off);
  huge.n = 1 << 14;
  huge.c = 1 << 11;
  huge.h = huge.w = 8;
  huge.oh = huge.ow = 4;
  EXPECT_FALSE(max_pool2d_cuda::takes_disjoint_windows(huge));
  huge.n = 1 << 12;
  EXPECT_TRUE(max_pool2d_cuda::takes_disjoint_windows(huge));
}

TEST(AvgPool2dKernel, ForwardAndBackwardMatchTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (const WindowCase& c : kWindowCases)
      for (CountIncludePad count : {CountIncludePad::on, CountIncludePad::off}) {
        if (c.dilation != Pool2dSize{1}) continue;  // avg_pool2d has no dilation
        const Tensor x = values(c.shape, dtype);
        const Pool2dGeometry g =
            pool2d_geometry("test", x, c.kernel, c.stride, c.padding, 1, c.ceil);
        const Shape out_shape{g.n, g.c, g.oh, g.ow};
        const Tensor y_cpu = empty(out_shape, {dtype}), y = empty(out_shape, {dtype});
        detail::avg_pool2d_forward(OnCpu{}, x, g, count, y_cpu);
        launch_avg_pool2d(x, g, count, y, nullptr);
        const double tol = device_parity_tolerance(dtype);
        EXPECT_TRUE(all_close(y, y_cpu, tol, tol)) << dtype << " " << shape_str(c.shape);

        const Tensor gy = values(out_shape, dtype);
        const Tensor gx_cpu = detail::avg_pool2d_backward(OnCpu{}, gy, g, count);
        const Tensor gx = empty(c.shape, {dtype});
        launch_avg_pool2d_backward(gy, g, count, gx, nullptr);
        const double btol = backward_tolerance(dtype);
        EXPECT_TRUE(all_close(gx, gx_cpu, btol, btol))
            << "backward " << dtype << " " << shape_str(c.shape)
            << (count == CountIncludePad::on ? " include pad" : " exclude pad");
      }
}

TEST(AdaptiveAvgPool2dKernel, ForwardAndBackwardMatchTheCpu) {
  // Bins that divide the input, overlapping bins (7 → 3), global pooling, and more outputs than
  // inputs (bins of one row shared by several outputs).
  struct Case {
    Shape shape;
    Pool2dSize out;
  };
  const Case cases[] = {{{2, 3, 6, 8}, {3, 4}},
                        {{1, 2, 7, 5}, {3, 2}},
                        {{2, 2, 5, 7}, {1, 1}},
                        {{1, 1, 3, 2}, {5, 3}}};
  for (DType dtype : kFloatingDtypes)
    for (const Case& c : cases) {
      const Tensor x = values(c.shape, dtype);
      const Shape out_shape{c.shape[0], c.shape[1], c.out.h, c.out.w};
      const Tensor y_cpu = empty(out_shape, {dtype}), y = empty(out_shape, {dtype});
      detail::adaptive_avg_pool2d_forward(OnCpu{}, x, y_cpu);
      launch_adaptive_avg_pool2d(x, y, nullptr);
      // The same double sum in the same order: exact.
      EXPECT_TRUE(all_close(y, y_cpu, 0, 0)) << dtype << " " << shape_str(c.shape);

      const Tensor gy = values(out_shape, dtype);
      const Tensor gx_cpu = detail::adaptive_avg_pool2d_backward(OnCpu{}, gy, c.shape);
      const Tensor gx = empty(c.shape, {dtype});
      launch_adaptive_avg_pool2d_backward(gy, gx, nullptr);
      const double tol = backward_tolerance(dtype);
      EXPECT_TRUE(all_close(gx, gx_cpu, tol, tol))
          << "backward " << dtype << " " << shape_str(c.shape);
    }
}

}  // namespace
}  // namespace rg
