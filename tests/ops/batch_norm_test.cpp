#include <gtest/gtest.h>

#include <cmath>

#include "core/thread_pool.h"
#include "ops/batch_norm/batch_norm_count.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

// Volumes (N, C, D, H, W), as the 3-D UNet normalises them: the spatial dims are one run of
// values per channel, so the result equals BatchNorm of the same data seen as (N, C, D·H, W).
// (Their gradcheck is in the spec, ops/batch_norm/batch_norm_spec.cpp.)
TEST(BatchNorm, VolumesMatchTheFlattenedInput) {
  const Tensor x = randn({3, 4, 2, 3, 5}), w = rand({4}), b = rand({4});
  const Tensor rm = zeros({4}), rv = ones({4}), rm4 = zeros({4}), rv4 = ones({4});
  const Tensor y = batch_norm(x, w, b, rm, rv, BatchNormMode::train);
  const Tensor y4 = batch_norm(x.reshape({3, 4, 6, 5}), w, b, rm4, rv4, BatchNormMode::train);
  EXPECT_TRUE(all_close(y.reshape({3, 4, 6, 5}), y4, 0, 0));
  EXPECT_TRUE(all_close(rv, rv4, 0, 0));
}

TEST(BatchNorm, LargeMeanKeepsVarianceDigits) {
  // f32 values 1000 + small noise: E[x²] − E[x]² in f32 would lose every digit of the variance.
  std::vector<double> v = rand({64, 2, 8, 8}, {DType::f64}).to_vector<double>();
  for (double& e : v) e = 1000.0 + 0.01 * e;
  const Tensor x = from_vector(v, {64, 2, 8, 8});
  Tensor rv = zeros({2});
  batch_norm(x, Tensor(), Tensor(), Tensor(), rv, BatchNormMode::train, 1.0);
  // Reference: the unbiased variance of the same f32 values, in f64 with two passes.
  const std::vector<double> xv = x.to_vector<double>();
  for (int64_t c = 0; c < 2; ++c) {
    double sum = 0, sq = 0, n = 0;
    for (std::size_t i = 0; i < xv.size(); ++i)
      if (static_cast<int64_t>(i / 64) % 2 == c) sum += xv[i], n += 1;
    const double mean = sum / n;
    for (std::size_t i = 0; i < xv.size(); ++i)
      if (static_cast<int64_t>(i / 64) % 2 == c) sq += (xv[i] - mean) * (xv[i] - mean);
    EXPECT_NEAR(rv.to_vector<double>()[c], sq / (n - 1), 1e-6 * sq / (n - 1));
  }
}

TEST(BatchNorm, SameResultOnAnyThreadCount) {
  const Tensor x = randn({8, 16, 12, 12});
  const Tensor gy = randn({8, 16, 12, 12});
  std::vector<std::vector<float>> results;
  const int before = num_threads();
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    Tensor xi = x.clone().set_requires_grad(true);
    Tensor rm = zeros({16}), rv = ones({16});
    Tensor y = batch_norm(xi, Tensor(), Tensor(), rm, rv, BatchNormMode::train);
    y.backward(gy);
    std::vector<float> all = y.to_vector<float>();
    for (float v : xi.grad().to_vector<float>()) all.push_back(v);
    for (float v : rv.to_vector<float>()) all.push_back(v);
    results.push_back(all);
  }
  set_num_threads(before);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

TEST(BatchNorm, PiecesCombineShardsLikeSyncBatchNorm) {
  // Two "ranks" hold 3 and 5 samples: their combined statistics and gradient sums give what
  // batch_norm computes on all 8 at once.
  Tensor x = randn({8, 3, 2, 2}, {DType::f64}).set_requires_grad(true);
  const Tensor w = rand({3}, {DType::f64}), b = rand({3}, {DType::f64});
  const Tensor gy = randn({8, 3, 2, 2}, {DType::f64});
  Tensor rm = zeros({3}, {DType::f64}), rv = ones({3}, {DType::f64});
  Tensor y = batch_norm(x, w, b, rm, rv, BatchNormMode::train);
  y.backward(gy);

  const Tensor xs[2] = {x.detach().narrow(0, 0, 3), x.detach().narrow(0, 3, 5)};
  const Tensor gys[2] = {gy.narrow(0, 0, 3), gy.narrow(0, 3, 5)};
  const Tensor empty_shard = zeros({0, 3, 2, 2}, {DType::f64});
  const BatchNormStats stats = batch_norm_combine_stats(
      {batch_norm_stats(xs[0]), batch_norm_stats(empty_shard), batch_norm_stats(xs[1])});
  EXPECT_EQ(stats.count, 32);
  Tensor rm2 = zeros({3}, {DType::f64}), rv2 = ones({3}, {DType::f64});
  batch_norm_update_running_stats(rm2, rv2, stats, 0.1);
  EXPECT_TRUE(all_close(rm2, rm, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(rv2, rv, 1e-12, 1e-12));
  const Tensor invstd = batch_norm_invstd(stats, 1e-5);

  BatchNormGradSums total{zeros({3}, {DType::f64}), zeros({3}, {DType::f64})};
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(all_close(batch_norm_elemt(xs[r], w, b, stats.mean, invstd),
                          r == 0 ? y.narrow(0, 0, 3) : y.narrow(0, 3, 5), 1e-12, 1e-12));
    const BatchNormGradSums s = batch_norm_backward_reduce(gys[r], xs[r], stats.mean, invstd);
    total.sum_dy = total.sum_dy + s.sum_dy;  // the allreduce
    total.sum_dy_xhat = total.sum_dy_xhat + s.sum_dy_xhat;
  }
  for (int r = 0; r < 2; ++r) {
    const Tensor gx =
        batch_norm_backward_elemt(gys[r], xs[r], w, stats.mean, invstd, total, stats.count);
    EXPECT_TRUE(all_close(gx, x.grad().narrow(0, r == 0 ? 0 : 3, r == 0 ? 3 : 5), 1e-12, 1e-12));
  }
  // Eval-style backward: no sums, gx = gy·w·invstd.
  const Tensor gx_eval = batch_norm_backward_elemt(gys[0], xs[0], w, stats.mean, invstd, {}, 0);
  const std::vector<double> gv = gys[0].contiguous().to_vector<double>(),
                            ev = gx_eval.to_vector<double>(), wv = w.to_vector<double>(),
                            iv = invstd.to_vector<double>();
  for (std::size_t i = 0; i < gv.size(); ++i) {
    const std::size_t c = (i / 4) % 3;
    EXPECT_NEAR(ev[i], gv[i] * wv[c] * iv[c], 1e-12);
  }
}

TEST(BatchNorm, EmptyShardStatsAreZeros) {
  const BatchNormStats s = batch_norm_stats(zeros({0, 2}));
  EXPECT_EQ(s.count, 0);
  EXPECT_TRUE(all_close(s.mean, zeros({2}, {DType::f64})));
  EXPECT_TRUE(all_close(s.m2, zeros({2}, {DType::f64})));
}

}  // namespace
}  // namespace rg

namespace rg {
namespace {

// Everything the op makes lands on its input's device, not on the calling thread's default
// (a DataParallel replica on cpu:1 once got its weight gradient on cpu:0).
// The batch counter counts in place, as an integer (exact past 2^53, where an f64 round trip
// would not be), on its logical device; anything but a contiguous i64 tensor is refused.
TEST(BatchNorm, CountBatchAddsOneInPlace) {
  const Tensor n = zeros({}, {DType::i64});
  const void* storage = n.data_ptr();
  batch_norm_count_batch(n);
  batch_norm_count_batch(n);
  EXPECT_EQ(n.data<int64_t>()[0], 2);
  EXPECT_EQ(n.data_ptr(), storage);
  const Tensor large = from_vector<int64_t>({(int64_t{1} << 53) + 1}, {1}, {DType::i64});
  batch_norm_count_batch(large);
  EXPECT_EQ(large.data<int64_t>()[0], (int64_t{1} << 53) + 2);
  const Tensor on_cpu1 = zeros({}, {DType::i64, Device::parse("cpu:1")});
  batch_norm_count_batch(on_cpu1);
  EXPECT_EQ(on_cpu1.to(Device::cpu()).data<int64_t>()[0], 1);

  EXPECT_TRUE(throws_error([] { batch_norm_count_batch(zeros({})); },
                           {"batch_norm_count_batch", "i64", "f32"}));
  EXPECT_TRUE(
      throws_error([] { batch_norm_count_batch(Tensor()); }, {"batch_norm_count_batch", "i64"}));
  EXPECT_TRUE(throws_error(
      [] {
        batch_norm_count_batch(zeros({2, 3}, {DType::i64}).transpose(0, 1));
      },
      {"batch_norm_count_batch", "contiguous"}));
}

TEST(BatchNorm, GradientsAndStatisticsStayOnTheInputsDevice) {
  const Device device = Device::parse("cpu:1");
  Tensor x = randn({4, 3, 2, 2}).to(device).set_requires_grad(true);
  Tensor w = ones({3}, {DType::f32, device}).set_requires_grad(true);
  Tensor b = zeros({3}, {DType::f32, device}).set_requires_grad(true);
  sum(batch_norm(x, w, b, Tensor(), Tensor(), BatchNormMode::train)).backward();
  EXPECT_EQ(x.grad().device(), device);
  EXPECT_EQ(w.grad().device(), device);
  EXPECT_EQ(b.grad().device(), device);
  const BatchNormStats stats = batch_norm_stats(x.detach());
  EXPECT_EQ(stats.mean.device(), device);
  EXPECT_EQ(batch_norm_invstd(stats, 1e-5).device(), device);
}

}  // namespace
}  // namespace rg
