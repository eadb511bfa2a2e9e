// upsample's GPU kernels (ops/upsample/upsample_kernels.cuh) through the emulator against the CPU
// kernels, forward and backward, for nearest and bilinear (align_corners off and on) on images
// and nearest and trilinear on volumes, every dtype, odd sizes, scales 1 to 3, one-pixel dims
// (where the linear modes' two taps coincide) and, through the op, non-contiguous inputs.
// The bilinear backward gathers what the CPU scatters, recomputing the taps; the sums may differ
// by contraction into fused multiply-adds: device_parity_tolerance.
#include <gtest/gtest.h>

#include "ops/ops.h"
#include "ops/upsample/upsample_kernels.cuh"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

Tensor values(const Shape& shape, DType dtype) {
  return add(mul(rand(shape, {DType::f64}), 4.0), -2.0).to(dtype);
}

struct Case {
  Shape shape;
  int64_t scale;
  UpsampleMode mode;
  AlignCorners align;
};

const Case kCases[] = {
    {{2, 3, 5, 7}, 2, UpsampleMode::nearest, AlignCorners::off},
    {{1, 2, 3, 4}, 3, UpsampleMode::nearest, AlignCorners::off},
    {{2, 2, 5, 7}, 2, UpsampleMode::bilinear, AlignCorners::off},
    {{1, 2, 4, 3}, 3, UpsampleMode::bilinear, AlignCorners::off},
    {{1, 2, 5, 7}, 2, UpsampleMode::bilinear, AlignCorners::on},
    {{1, 1, 1, 6}, 3, UpsampleMode::bilinear, AlignCorners::on},
    {{1, 1, 1, 5}, 3, UpsampleMode::bilinear, AlignCorners::off},
    {{1, 2, 3, 5}, 1, UpsampleMode::bilinear, AlignCorners::on},
};

TEST(UpsampleKernel, ForwardAndBackwardMatchTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (const Case& c : kCases) {
      const Tensor x = values(c.shape, dtype);
      const Shape out_shape{c.shape[0], c.shape[1], c.shape[2] * c.scale, c.shape[3] * c.scale};
      const Tensor y_cpu = empty(out_shape, {dtype}), y = empty(out_shape, {dtype});
      detail::upsample_forward(OnCpu{}, x, c.scale, c.mode, c.align, y_cpu);
      launch_upsample(x, c.scale, c.mode, c.align, y, nullptr);
      const double tol = device_parity_tolerance(dtype);
      const std::string what =
          std::string(c.mode == UpsampleMode::nearest ? "nearest" : "bilinear") +
          (c.align == AlignCorners::on ? " align" : "") + " " + shape_str(c.shape) + " x" +
          std::to_string(c.scale);
      EXPECT_TRUE(all_close(y, y_cpu, tol, tol)) << dtype << " " << what;

      const Tensor gy = values(out_shape, dtype);
      const Tensor gx_cpu =
          detail::upsample_backward(OnCpu{}, gy, c.shape, c.scale, c.mode, c.align);
      const Tensor gx = empty(c.shape, {dtype});
      launch_upsample_backward(gy, c.scale, c.mode, c.align, gx, nullptr);
      EXPECT_TRUE(all_close(gx, gx_cpu, tol, tol)) << "backward " << dtype << " " << what;
    }
}

const Case kVolumeCases[] = {
    {{2, 3, 3, 5, 7}, 2, UpsampleMode::nearest, AlignCorners::off},
    {{1, 2, 2, 3, 1}, 3, UpsampleMode::nearest, AlignCorners::off},
    {{2, 2, 3, 5, 3}, 2, UpsampleMode::trilinear, AlignCorners::off},
    {{1, 1, 3, 2, 3}, 3, UpsampleMode::trilinear, AlignCorners::off},
    {{1, 2, 3, 5, 2}, 2, UpsampleMode::trilinear, AlignCorners::on},
    {{1, 1, 1, 4, 1}, 3, UpsampleMode::trilinear, AlignCorners::off},
    {{1, 1, 1, 3, 2}, 2, UpsampleMode::trilinear, AlignCorners::on},
    {{1, 2, 2, 3, 5}, 1, UpsampleMode::trilinear, AlignCorners::on},
};

TEST(UpsampleKernel, VolumesForwardAndBackwardMatchTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (const Case& c : kVolumeCases) {
      const Tensor x = values(c.shape, dtype);
      const Shape out_shape{c.shape[0], c.shape[1], c.shape[2] * c.scale, c.shape[3] * c.scale,
                            c.shape[4] * c.scale};
      const Tensor y_cpu = empty(out_shape, {dtype}), y = empty(out_shape, {dtype});
      detail::upsample3d_forward(OnCpu{}, x, c.scale, c.mode, c.align, y_cpu);
      launch_upsample3d(x, c.scale, c.mode, c.align, y, nullptr);
      const double tol = device_parity_tolerance(dtype);
      const std::string what =
          std::string(c.mode == UpsampleMode::nearest ? "nearest" : "trilinear") +
          (c.align == AlignCorners::on ? " align" : "") + " " + shape_str(c.shape) + " x" +
          std::to_string(c.scale);
      EXPECT_TRUE(all_close(y, y_cpu, tol, tol)) << dtype << " " << what;

      const Tensor gy = values(out_shape, dtype);
      const Tensor gx_cpu =
          detail::upsample3d_backward(OnCpu{}, gy, c.shape, c.scale, c.mode, c.align);
      const Tensor gx = empty(c.shape, {dtype});
      launch_upsample3d_backward(gy, c.scale, c.mode, c.align, gx, nullptr);
      EXPECT_TRUE(all_close(gx, gx_cpu, tol, tol)) << "backward " << dtype << " " << what;
    }
}

TEST(UpsampleKernel, VolumesNonContiguousInputThroughTheOpsLayout) {
  // The op makes its input contiguous before either kernel; the GPU kernel must then see what
  // the CPU kernel sees: a transposed volume, copied as the op copies it.
  for (UpsampleMode mode : {UpsampleMode::nearest, UpsampleMode::trilinear}) {
    const Tensor xt = values({1, 2, 5, 3, 4}, DType::f32).transpose(2, 4);  // (1, 2, 4, 3, 5)
    const Tensor expected = upsample(xt, 2, mode);
    const Tensor y = empty(expected.shape(), {DType::f32});
    launch_upsample3d(xt.contiguous(), 2, mode, AlignCorners::off, y, nullptr);
    EXPECT_TRUE(all_close(y, expected, 1e-6, 1e-6));
  }
}

TEST(UpsampleKernel, OutputRangeHoldsEveryReader) {
  // The gather's range of outputs must hold every output whose taps name an input position:
  // checked against all outputs for many sizes, scales and both alignments, in float.
  for (AlignCorners align : {AlignCorners::off, AlignCorners::on})
    for (int64_t in = 1; in <= 40; ++in)
      for (int64_t scale = 1; scale <= 5; ++scale) {
        const int64_t out = in * scale;
        const float ratio = detail::linear_ratio<float>(in, out, scale, align);
        for (int64_t o = 0; o < out; ++o) {
          const detail::Taps<float> t = detail::linear_tap<float>(o, in, ratio, align);
          for (int64_t p : {t.i0, t.i1}) {
            const upsample_cuda::Range r = upsample_cuda::outputs_reading(p, in, out, scale, align);
            ASSERT_TRUE(r.first <= o && o <= r.last)
                << "in " << in << " scale " << scale << " output " << o << " position " << p;
          }
        }
      }
}

}  // namespace
}  // namespace rg
