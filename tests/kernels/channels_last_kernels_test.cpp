// The GPU kernels of the channels-last paths through the emulator, against the CPU's NCHW
// kernels: BatchNorm on a channels-last activation's (M, C) rows — the row kernels' coalesced
// per-channel sums (ops/batch_norm/batch_norm_rows_kernels.cuh) and the element passes — forward
// and backward, every dtype, the mixed mode, train and eval, batch_norm_relu's mask and
// batch_norm_gelu's derivative; and max_pool2d's NHWC kernels
// (ops/max_pool2d/max_pool2d_nhwc_kernels.cuh), outputs and indices exact, gradients exact in f32
// and f64. Channel counts below, at and past a warp's 32 lanes (partial and several channel tiles).
#include <gtest/gtest.h>

#include "ops/batch_norm/batch_norm_channels_last.h"
#include "ops/batch_norm/batch_norm_kernels.cuh"
#include "ops/max_pool2d/max_pool2d_nhwc_kernels.cuh"
#include "ops/ops.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

constexpr MemoryFormat kCl = MemoryFormat::channels_last;

Tensor values(const Shape& shape, DType dtype, double scale = 1.0) {
  return mul(add(mul(rand(shape, {DType::f64}), 2.0), -1.0), scale).to(dtype);
}

// Channel 1 at 40 ± 1: the shifted sums must keep its variance.
Tensor bn_input(const Shape& shape, DType dtype) {
  Tensor offset = zeros({shape[1]}, {DType::f64});
  offset.data<double>()[1] = 40.0;
  return add(values(shape, DType::f64), offset.reshape({1, shape[1], 1, 1})).to(dtype);
}

// A channels-last tensor's rows, and rows seen back as (N, C, H, W) — no history.
Tensor rows_of(const Tensor& nchw) {
  return detail::channels_last_rows(nchw.contiguous(kCl));
}
Tensor from_rows(const Tensor& rows, const Shape& shape) {
  return detail::rows_as_channels_last(rows, shape, kCl);
}

struct BnCase {
  Shape shape;
  bool affine, running, train;
};

const BnCase kBnCases[] = {{{4, 3, 3, 5}, true, true, true},
                           {{2, 33, 3, 2}, true, false, true},  // two channel tiles, one partial
                           {{3, 64, 2, 3}, false, true, true},
                           {{2, 24, 3, 3}, true, true, false},
                           {{5, 2, 9, 9}, true, false, true}};  // many rows per channel lane

void check_bn(const BnCase& c, DType dtype, DType param_dtype, detail::BnActivation act) {
  const std::string what = std::string(dtype_name(dtype)) + "/" +
                           std::string(dtype_name(param_dtype)) + " " + shape_str(c.shape) +
                           (c.train ? " train" : " eval") +
                           (act == detail::BnActivation::relu   ? " relu"
                            : act == detail::BnActivation::gelu ? " gelu"
                                                                : "");
  const double tol = device_parity_tolerance(dtype);
  const int64_t ch = c.shape[1];
  const Tensor x = bn_input(c.shape, dtype);
  const auto params = [&](double low) {
    return add(rand({ch}, {DType::f64}), low).to(param_dtype);
  };
  const Tensor w = c.affine ? params(0.5) : Tensor(), b = c.affine ? params(-0.5) : Tensor();
  const Tensor rm = c.running ? params(0.0) : Tensor(), rv = c.running ? params(0.5) : Tensor();
  const Tensor rm_gpu = c.running ? rm.clone() : Tensor(),
               rv_gpu = c.running ? rv.clone() : Tensor();
  const detail::BnConfig config{c.train, 0.1, 1e-5, act};
  const detail::BnForward expected = detail::bn_forward(OnCpu{}, x, w, b, rm, rv, config);
  const detail::BnForward got =
      launch_bn_forward(rows_of(x), w, b, rm_gpu, rv_gpu, config, nullptr);
  EXPECT_TRUE(all_close(from_rows(got.y, c.shape), expected.y, tol, tol)) << "y " << what;
  EXPECT_TRUE(all_close(got.mean, expected.mean, 1e-12, 1e-12)) << "mean " << what;
  EXPECT_TRUE(all_close(got.invstd, expected.invstd, 1e-9, 1e-9)) << "invstd " << what;
  if (c.running) {
    const double ptol = device_parity_tolerance(param_dtype);
    EXPECT_TRUE(all_close(rm_gpu, rm, ptol, ptol)) << "running_mean " << what;
    EXPECT_TRUE(all_close(rv_gpu, rv, ptol, ptol)) << "running_var " << what;
  }
  const Tensor gy = values(c.shape, DType::f64, 0.5).to(dtype);
  const detail::BnWants wants{true, c.affine, c.affine};
  const detail::BnActSaved fused = act == detail::BnActivation::none
                                       ? detail::BnActSaved{}
                                       : detail::BnActSaved{act, expected.scale, expected.shift};
  const detail::BnBackward e = detail::bn_backward(
      OnCpu{}, gy, x, w, expected.mean, expected.invstd, c.train, wants, param_dtype, fused);
  const detail::BnBackward g =
      launch_bn_backward(rows_of(gy), rows_of(x), w, expected.mean, expected.invstd, c.train, wants,
                         param_dtype, nullptr, fused);
  EXPECT_TRUE(all_close(from_rows(g.gx, c.shape), e.gx, tol, tol)) << "gx " << what;
  if (c.affine) {
    // gelu's derivative is taken at a v the CPU gets from f64 arithmetic and the GPU from f32:
    // its sums agree within the dtype's parity (as BatchNormKernels.FusedGeluMatchesTheCpu
    // allows), relu's mask exactly.
    const double sum_tol = act == detail::BnActivation::gelu ? tol : 1e-9;
    EXPECT_TRUE(all_close(g.gweight, e.gweight, sum_tol, sum_tol)) << "gweight " << what;
    EXPECT_TRUE(all_close(g.gbias, e.gbias, sum_tol, sum_tol)) << "gbias " << what;
  }
}

TEST(ChannelsLastKernels, BatchNormRowsMatchTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (const BnCase& c : kBnCases) {
      check_bn(c, dtype, dtype, detail::BnActivation::none);
      check_bn(c, dtype, dtype, detail::BnActivation::relu);
      check_bn(c, dtype, dtype, detail::BnActivation::gelu);
      if (dtype == DType::f16 || dtype == DType::bf16)
        check_bn(c, dtype, DType::f32, detail::BnActivation::none);
    }
}

// The row split: parts of whole rows that cover every row once, for any row and channel count.
TEST(ChannelsLastKernels, RowSplitsCoverEveryRowOnce) {
  for (int64_t rows : {1, 2, 7, 64, 1000})
    for (int64_t channels : {1, 31, 32, 33, 512}) {
      const bn_rows::RowSplit s = bn_rows::split_rows(rows, channels);
      EXPECT_GE(s.parts, 1);
      EXPECT_GE(s.per_part * s.parts, rows) << rows << " x " << channels;
      EXPECT_LT(s.per_part * (s.parts - 1), rows) << rows << " x " << channels;
    }
}

struct Window {
  Shape shape;
  Pool2dSize kernel, stride, padding, dilation;
  CeilMode ceil;
};

const Window kWindows[] = {
    {{2, 3, 7, 9}, 3, 2, 1, 1, CeilMode::off},
    {{1, 33, 8, 6}, 2, 2, 0, 1, CeilMode::off},  // disjoint windows: the owning kernel
    {{2, 3, 7, 9}, 2, 2, 0, 1, CeilMode::off},   // disjoint, with a leftover row and column
    {{2, 3, 6, 7}, 3, 3, 1, 1, CeilMode::on},    // disjoint, padded, a partial last window
    {{1, 2, 9, 8}, {3, 2}, {1, 2}, {1, 0}, {2, 3}, CeilMode::off},
    {{2, 5, 6, 7}, 3, 2, 1, 1, CeilMode::on},
    {{2, 4, 5, 4}, {5, 4}, 1, 0, 1, CeilMode::off},
};

TEST(ChannelsLastKernels, MaxPool2dMatchesTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (const Window& c : kWindows) {
      const std::string what = std::string(dtype_name(dtype)) + " " + shape_str(c.shape);
      const Tensor x = values(c.shape, dtype, 2.0);
      const Pool2dGeometry g =
          pool2d_geometry("test", x, c.kernel, c.stride, c.padding, c.dilation, c.ceil);
      const Shape out_shape{g.n, g.c, g.oh, g.ow};
      const Tensor y_cpu = empty(out_shape, {dtype}), i_cpu = empty(out_shape, {DType::i64});
      detail::max_pool2d_forward(OnCpu{}, x, g, y_cpu, i_cpu);
      const Tensor y = empty(out_shape, {dtype}, kCl), i = empty(out_shape, {DType::i64}, kCl);
      launch_max_pool2d_nhwc(x.contiguous(kCl), g, y, i, nullptr);
      EXPECT_TRUE(all_close(y, y_cpu, 0, 0)) << what;
      EXPECT_EQ(i.to_vector<int64_t>(), i_cpu.to_vector<int64_t>()) << what;
      // The CPU's NHWC kernel too.
      const Tensor y2 = empty(out_shape, {dtype}, kCl), i2 = empty(out_shape, {DType::i64}, kCl);
      detail::max_pool2d_forward_nhwc(OnCpu{}, x.contiguous(kCl), g, y2, i2);
      EXPECT_TRUE(all_close(y2, y_cpu, 0, 0)) << what;
      EXPECT_EQ(i2.to_vector<int64_t>(), i_cpu.to_vector<int64_t>()) << what;

      const Tensor gy = values(out_shape, dtype);
      const Tensor gx_cpu = detail::max_pool2d_backward(OnCpu{}, gy, i_cpu, g);
      const Tensor gx = empty(c.shape, {dtype}, kCl);
      launch_max_pool2d_backward_nhwc(gy.contiguous(kCl), i, g, gx, nullptr);
      const double tol =
          dtype == DType::f32 || dtype == DType::f64 ? 0.0 : device_parity_tolerance(dtype);
      EXPECT_TRUE(all_close(gx, gx_cpu, tol, tol)) << "backward " << what;
      EXPECT_TRUE(all_close(detail::max_pool2d_backward_nhwc(OnCpu{}, gy.contiguous(kCl), i, g),
                            gx_cpu, 0, 0))
          << "cpu nhwc backward " << what;
    }
}

}  // namespace
}  // namespace rg
