// Evaluation counts kept on the device (train/device_eval.h) against the host's
// DistributedEvaluator — ranks as threads, logits on a logical device standing in for a GPU, ties
// — and the device timer (train/device_timer.h) on the CPU.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "parallel/single_group.h"
#include "tests/parallel/parallel_test_util.h"
#include "train/device_eval.h"
#include "train/device_timer.h"
#include "train/trainer.h"

namespace rg::train {
namespace {
using parallel::DistributedEvaluator;
using parallel::DistributedSampler;
using parallel::EvalTotals;
using parallel::ProcessGroup;
using rg::testing::throws_error;

// Every rank scores its share in batches, on the host and on its "device" (cpu:1): the totals over
// ranks agree — the same count of each sample once, padding never, and the same loss up to the
// order of the sum.
void device_totals_equal_host_totals(std::shared_ptr<ProcessGroup> g, int64_t n, DType dtype) {
  const int64_t classes = 5, batch = 4;
  const Tensor logits_all = parallel::testing::det_normal({n, classes}, 31, dtype);
  const Tensor labels_all = parallel::testing::det_labels(n, classes, 32);
  DistributedSampler sampler(n, *g, {.seed = 4});
  sampler.set_epoch(1);
  const std::vector<int64_t> mine = sampler.indices();
  DistributedEvaluator host(sampler);
  DeviceEvaluator device(sampler, Device::cpu(1));
  for (std::size_t k = 0; k < mine.size(); k += batch) {
    const std::size_t end = std::min(mine.size(), k + batch);
    std::vector<Tensor> rows, labels;
    for (std::size_t i = k; i < end; ++i) {
      rows.push_back(logits_all.narrow(0, mine[i], 1));
      labels.push_back(labels_all.narrow(0, mine[i], 1));
    }
    host.add(cat(rows), cat(labels));
    device.add(cat(rows).to(Device::cpu(1)), cat(labels).to(Device::cpu(1)));
  }
  EXPECT_EQ(device.position(), sampler.size());
  const EvalTotals want = host.all_ranks(*g), got = device.all_ranks(*g);
  EXPECT_EQ(got.count, n);
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.correct, want.correct);
  EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-9 * std::abs(want.loss_sum));
  EXPECT_TRUE(throws_error(
      [&] {
        device.add(logits_all.narrow(0, 0, 1).to(Device::cpu(1)),
                   labels_all.narrow(0, 0, 1).to(Device::cpu(1)));
      },
      {"DeviceEvaluator", "only"}));
}

TEST(DeviceEvaluator, TotalsEqualTheHostEvaluatorsOverRanks) {
  for (int ranks : {1, 2, 3})
    parallel::testing::on_threads(
        ranks, [](auto g) { device_totals_equal_host_totals(g, 13, DType::f32); });
  parallel::testing::on_threads(4,
                                [](auto g) { device_totals_equal_host_totals(g, 2, DType::f64); });
  parallel::testing::on_threads(2,
                                [](auto g) { device_totals_equal_host_totals(g, 9, DType::bf16); });
}

TEST(DeviceEvaluator, TiesGoToTheFirstClassAsOnTheHost) {
  // Rows with two equal maxima: the first of them is the prediction.
  const Tensor logits = from_vector<float>({1, 1, 0, 0, 2, 2, 3, 3, 3, 0, 0, 0}, {4, 3});
  const Tensor labels = from_vector<int64_t>({0, 2, 1, 0}, {4}, {DType::i64});
  DistributedSampler sampler(4, 1, 0, {.shuffle = parallel::Shuffle::off});
  DistributedEvaluator host(sampler);
  DeviceEvaluator device(sampler, Device::cpu());
  host.add(logits, labels);
  device.add(logits, labels);
  parallel::SingleGroup world;
  const EvalTotals want = host.all_ranks(world), got = device.all_ranks(world);
  EXPECT_EQ(want.correct, 2);  // rows 0 and 3
  EXPECT_EQ(got.correct, want.correct);
  EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-12);
}

TEST(DeviceEvaluator, BadInputsAreClearErrors) {
  DistributedSampler sampler(4, 1, 0);
  DeviceEvaluator device(sampler, Device::cpu(1));
  const Tensor logits = zeros({2, 3}), labels = zeros({2}, {DType::i64});
  EXPECT_TRUE(throws_error([&] { device.add(logits, labels); },
                           {"DeviceEvaluator", "evaluator's device cpu:1"}));
  EXPECT_TRUE(
      throws_error([&] { device.add(logits.to(Device::cpu(1)), zeros({2}).to(Device::cpu(1))); },
                   {"DeviceEvaluator", "i64"}));
  EXPECT_TRUE(
      throws_error([&] { device.add(zeros({2}).to(Device::cpu(1)), labels.to(Device::cpu(1))); },
                   {"expected logits (B, K)"}));
}

TEST(DeviceTimer, TimesTheWallClockOnTheCpu) {
  DeviceTimer timer(Device::cpu());
  EXPECT_TRUE(throws_error([&] { timer.seconds(); }, {"DeviceTimer", "before stop"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  timer.stop();
  EXPECT_GE(timer.seconds(), 0.02);
  EXPECT_LT(timer.seconds(), 10.0);
}

TEST(DeviceTimer, TheLineAtTheEndOfARun) {
  EXPECT_EQ(device_time_line(Device::cpu(), {1.0, 2.25}, 0.5),
            "device time: training 3.250 s + last evaluation 0.500 s = 3.750 s (wall clock on "
            "cpu; epochs 1.000 2.250)");
  EXPECT_EQ(device_time_line(Device::cuda(0), {0.4}, 0.1),
            "device time: training 0.400 s + last evaluation 0.100 s = 0.500 s (CUDA events on "
            "cuda:0; epochs 0.400)");
}

}  // namespace
}  // namespace rg::train
