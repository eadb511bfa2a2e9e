// batch_norm's GPU kernels (ops/batch_norm/batch_norm_kernels.cuh) run through the emulator
// against the CPU path, forward (y, saved mean and invstd, running stats updated in place) and
// backward (gx, gweight, gbias): every dtype, the mixed mode (16-bit input, f32 parameters),
// train and eval, with and without affine parameters and running stats; (N, C) and (N, C, H, W)
// inputs, with a channel far from zero (the shifted sums keep its variance); batch_norm_relu's
// fused relu and batch_norm_gelu's fused gelu, forward and backward. The per-channel sums
// split over several blocks (split_for) in most cases, as on a GPU.
#include <gtest/gtest.h>

#include "core/launch_counts.h"
#include "ops/batch_norm/batch_norm_kernels.cuh"
#include "ops/ops.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

struct Case {
  Shape shape;
  bool affine, running, train;
};

const Case kCases[] = {{{4, 3, 3, 5}, true, true, true},
                       {{5, 6}, false, false, true},
                       {{2, 3, 7}, true, false, true},
                       {{3, 3, 2, 2}, true, true, false},
                       {{4, 2}, false, true, false},
                       {{2, 3, 2, 3, 2}, true, true, true},  // a volume, as the 3-D UNet's
                       {{5, 2, 9, 9}, true, false, true},    // planes wider than a block
                       {{3, 2, 0}, true, true, false}};      // no values: eval's sums are 0

Tensor input_for(const Shape& shape, DType dtype) {
  // Channel 1 sits at 40 ± 1: a naive E[x²] − E[x]² in f32 would lose its variance.
  Tensor x = add(mul(rand(shape, {DType::f64}), 2.0), -1.0);
  Tensor offset = zeros({shape[1]}, {DType::f64});
  offset.data<double>()[1] = 40.0;
  Shape view(shape.size(), 1);
  view[1] = shape[1];
  return add(x, offset.reshape(view)).to(dtype);
}

Tensor channels(int64_t c, DType dtype, double low) {
  return add(rand({c}, {DType::f64}), low).to(dtype);
}

void expect_close(const Tensor& got, const Tensor& expected, double tol, const std::string& what) {
  ASSERT_EQ(got.defined(), expected.defined()) << what;
  if (got.defined()) {
    EXPECT_TRUE(all_close(got, expected, tol, tol)) << what;
  }
}

void check_case(const Case& c, DType dtype, DType param_dtype, detail::BnActivation act) {
  const std::string what = std::string(dtype_name(dtype)) + "/" +
                           std::string(dtype_name(param_dtype)) + " " + shape_str(c.shape) +
                           (c.train ? " train" : " eval") +
                           (act == detail::BnActivation::relu   ? " relu"
                            : act == detail::BnActivation::gelu ? " gelu"
                                                                : "");
  const double tol = device_parity_tolerance(dtype);
  const int64_t ch = c.shape[1];
  const Tensor x = input_for(c.shape, dtype);
  const Tensor w = c.affine ? channels(ch, param_dtype, 0.5) : Tensor();
  const Tensor b = c.affine ? channels(ch, param_dtype, -0.5) : Tensor();
  const Tensor rm = c.running ? channels(ch, param_dtype, 0.0) : Tensor();
  const Tensor rv = c.running ? channels(ch, param_dtype, 0.5) : Tensor();
  const Tensor rm_gpu = c.running ? rm.clone() : Tensor(),
               rv_gpu = c.running ? rv.clone() : Tensor();
  const detail::BnConfig config{c.train, 0.1, 1e-5, act};
  const detail::BnForward expected = detail::bn_forward(OnCpu{}, x, w, b, rm, rv, config);
  const detail::BnForward got = launch_bn_forward(x, w, b, rm_gpu, rv_gpu, config, nullptr);
  expect_close(got.y, expected.y, tol, "y " + what);
  expect_close(got.mean, expected.mean, 1e-12, "mean " + what);
  expect_close(got.invstd, expected.invstd, 1e-9, "invstd " + what);
  expect_close(got.scale, expected.scale, 1e-9, "activation's scale " + what);
  expect_close(got.shift, expected.shift, 1e-9, "activation's shift " + what);
  expect_close(rm_gpu, rm, device_parity_tolerance(param_dtype), "running_mean " + what);
  expect_close(rv_gpu, rv, device_parity_tolerance(param_dtype), "running_var " + what);

  const Tensor gy = add(rand(c.shape, {DType::f64}), -0.5).to(dtype);
  for (const detail::BnWants wants :
       {detail::BnWants{true, true, true}, detail::BnWants{true, false, false},
        detail::BnWants{false, true, true}}) {
    if (!c.affine && (wants.weight || wants.bias)) continue;
    // The fused ops' backward reads gy through the activation at the forward's value, from
    // the forward's scale and shift.
    const detail::BnActSaved fused{act, expected.scale, expected.shift};
    const detail::BnBackward e = detail::bn_backward(
        OnCpu{}, gy, x, w, expected.mean, expected.invstd, c.train, wants, param_dtype, fused);
    const detail::BnBackward g = launch_bn_backward(gy, x, w, expected.mean, expected.invstd,
                                                    c.train, wants, param_dtype, nullptr, fused);
    expect_close(g.gx, e.gx, tol, "gx " + what);
    // gelu's derivative is computed in compute_t on both, but at a v that the CPU gets from f64
    // arithmetic and the GPU from f32 (as y): its sums agree within the dtype's parity, not the
    // f64 sums' 1e-9 (relu's mask is the same on both, so its sums are).
    const double sum_tol = act == detail::BnActivation::gelu ? tol : 1e-9;
    expect_close(g.gweight, e.gweight, sum_tol, "gweight " + what);
    expect_close(g.gbias, e.gbias, sum_tol, "gbias " + what);
  }
}

TEST(BatchNormKernels, MatchTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (const Case& c : kCases) {
      check_case(c, dtype, dtype, detail::BnActivation::none);
      if (dtype == DType::f16 || dtype == DType::bf16)
        check_case(c, dtype, DType::f32, detail::BnActivation::none);
    }
}

// batch_norm_relu: the relu fused into the element pass, and the backward's two passes reading
// gy through the mask recomputed from x (a relu that zeroes some of every channel's values).
TEST(BatchNormKernels, FusedReluMatchesTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (const Case& c : kCases) check_case(c, dtype, dtype, detail::BnActivation::relu);
}

// batch_norm_gelu: gelu fused into the element pass (CUDA's erff and expf on a GPU, the host's
// f32 math emulated), and the backward's two passes reading gy through gelu's derivative at the
// value recomputed from x; the mixed mode too, as airbench94 runs under O2.
TEST(BatchNormKernels, FusedGeluMatchesTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (const Case& c : kCases) {
      check_case(c, dtype, dtype, detail::BnActivation::gelu);
      if (dtype == DType::f16 || dtype == DType::bf16)
        check_case(c, dtype, DType::f32, detail::BnActivation::gelu);
    }
}

// The batch counters' increment (batch_norm_count_batch): every element, once.
TEST(BatchNormKernels, CountMatchesTheCpu) {
  for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{300}}) {
    std::vector<int64_t> start(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) start[static_cast<std::size_t>(i)] = i * 1000003 - 7;
    const Tensor cpu = from_vector(start, {n}, {DType::i64}),
                 gpu = from_vector(start, {n}, {DType::i64});
    detail::bn_count(OnCpu{}, cpu);
    launch_bn_count(gpu, nullptr);
    EXPECT_EQ(gpu.to_vector<int64_t>(), cpu.to_vector<int64_t>()) << n;
    EXPECT_EQ(cpu.to_vector<int64_t>()[0], start[0] + 1);
  }
}

// What a fused BatchNorm launches (core/launch_counts.h counts every emulated launch): 4 kernels
// forward (stats in parts, their sum, the per-channel coefficients, the element pass with the
// activation) and 4 backward (the same shape), whatever the activation — gelu(batch_norm) took
// one more pointwise kernel each way; the batch counter 1 (4 before: to f64, +1, to i64, copy).
TEST(BatchNormKernels, LaunchesPerCall) {
  const Tensor x = input_for({4, 3, 3, 5}, DType::f32), gy = input_for({4, 3, 3, 5}, DType::f32);
  const Tensor w = channels(3, DType::f32, 0.5), b = channels(3, DType::f32, -0.5);
  for (detail::BnActivation act :
       {detail::BnActivation::none, detail::BnActivation::relu, detail::BnActivation::gelu}) {
    LaunchCounts before = launch_counts();
    const detail::BnForward f =
        launch_bn_forward(x, w, b, Tensor(), Tensor(), {true, 0.1, 1e-5, act}, nullptr);
    EXPECT_EQ((launch_counts() - before).kernels, 4);
    before = launch_counts();
    launch_bn_backward(gy, x, w, f.mean, f.invstd, true, {}, DType::f32, nullptr,
                       {act, f.scale, f.shift});
    EXPECT_EQ((launch_counts() - before).kernels, 4);
  }
  const Tensor counter = zeros({}, {DType::i64});
  const LaunchCounts before = launch_counts();
  launch_bn_count(counter, nullptr);
  const LaunchCounts launched = launch_counts() - before;
  EXPECT_EQ(launched.kernels, 1);
  EXPECT_EQ(launched.library_calls + launched.copies, 0);
}

// The per-pass kernels that the SyncBatchNorm pieces run, one by one.
TEST(BatchNormKernels, PassesMatchTheCpu) {
  for (DType dtype : kFloatingDtypes) {
    const double tol = device_parity_tolerance(dtype);
    const Tensor x = input_for({3, 4, 2, 3}, dtype), gy = input_for({3, 4, 2, 3}, dtype);
    const Tensor mean = channels(4, DType::f64, -0.5), k = channels(4, DType::f64, 0.5);
    const Tensor a = channels(4, DType::f64, -0.5), b = channels(4, DType::f64, 0.0);
    const std::string what(dtype_name(dtype));
    const TensorOptions f64{DType::f64};
    Tensor m_cpu = empty({4}, f64), m2_cpu = empty({4}, f64), m_gpu = empty({4}, f64),
           m2_gpu = empty({4}, f64);
    detail::bn_stats(OnCpu{}, x, m_cpu, m2_cpu);
    launch_bn_stats(x, m_gpu, m2_gpu, nullptr);
    expect_close(m_gpu, m_cpu, 1e-12, "stats mean " + what);
    expect_close(m2_gpu, m2_cpu, 1e-10, "stats m2 " + what);

    const Tensor y_cpu = empty_like(x), y_gpu = empty_like(x);
    detail::bn_elemt(OnCpu{}, x, y_cpu, mean, k, a);
    launch_bn_elemt(x, y_gpu, mean, k, a, nullptr);
    expect_close(y_gpu, y_cpu, tol, "elemt " + what);

    Tensor s_cpu = empty({4}, f64), t_cpu = empty({4}, f64), s_gpu = empty({4}, f64),
           t_gpu = empty({4}, f64);
    detail::bn_backward_reduce(OnCpu{}, gy, x, mean, s_cpu, t_cpu);
    launch_bn_backward_reduce(gy, x, mean, s_gpu, t_gpu, nullptr);
    expect_close(s_gpu, s_cpu, 1e-10, "sum_dy " + what);
    expect_close(t_gpu, t_cpu, 1e-10, "sum_dy_xmu " + what);

    const Tensor gx_cpu = empty_like(x), gx_gpu = empty_like(x);
    detail::bn_backward_elemt(OnCpu{}, gy, x, gx_cpu, mean, k, a, b);
    launch_bn_backward_elemt(gy, x, gx_gpu, mean, k, a, b, nullptr);
    expect_close(gx_gpu, gx_cpu, tol, "backward elemt " + what);
  }
}

}  // namespace
}  // namespace rg
