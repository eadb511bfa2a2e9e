// parallel/segmentation_eval.h on ranks as threads (ThreadGroup): Dice/IoU counts summed over
// 2-4 ranks equal one process's counts over the whole set, when no rank count divides the set
// (the sampler pads) — every sample counted once, padding never; binary and multi-class.

#include "parallel/segmentation_eval.h"

#include <gtest/gtest.h>

#include "tests/parallel/parallel_test_util.h"

namespace rg::parallel {
namespace {

using rg::testing::throws_error;
using namespace rg::parallel::testing;

void counts_each_sample_once(std::shared_ptr<ProcessGroup> g, int64_t n, SegmentationKind kind) {
  const int64_t classes = kind == SegmentationKind::binary ? 1 : 3, batch = 2;
  const SegmentationEvalOptions options{.kind = kind, .num_classes = classes, .threshold = 0.4};
  // Samples (1 or C, 3, 4) with their masks.
  const Tensor logits_all = det_normal({n, classes, 3, 4}, 91, DType::f64);
  const Tensor target_all = kind == SegmentationKind::binary
                                ? det_labels(n * 12, 2, 92).to(DType::f64).view({n, 1, 3, 4})
                                : det_labels(n * 12, classes, 93).view({n, 3, 4});
  nn::SegmentationCounts expected;
  {
    DistributedSampler one(n, 1, 0, {.shuffle = Shuffle::off});
    DistributedSegmentationEvaluator e(one, options);
    e.add(logits_all, target_all);
    expected = e.local();
  }
  DistributedSampler sampler(n, *g, {.seed = 5});
  sampler.set_epoch(1);
  const std::vector<int64_t> mine = sampler.indices();
  DistributedSegmentationEvaluator eval(sampler, options);
  for (std::size_t k = 0; k < mine.size(); k += batch) {  // batches in sampler order
    const std::size_t end = std::min(mine.size(), k + batch);
    std::vector<Tensor> xs, ts;
    for (std::size_t i = k; i < end; ++i) {
      xs.push_back(logits_all.narrow(0, mine[i], 1));
      ts.push_back(target_all.narrow(0, mine[i], 1));
    }
    eval.add(cat(xs), cat(ts));
  }
  EXPECT_EQ(eval.position(), sampler.size());
  const nn::SegmentationCounts total = eval.all_ranks(*g);
  EXPECT_EQ(total.intersection, expected.intersection);
  EXPECT_EQ(total.predicted, expected.predicted);
  EXPECT_EQ(total.target, expected.target);
  // Every position of every sample is in exactly one class of the target (multi-class).
  if (kind == SegmentationKind::multiclass) {
    int64_t positions = 0;
    for (int64_t t : total.target) positions += t;
    EXPECT_EQ(positions, n * 12);
  }
  EXPECT_EQ(total.mean_dice(), expected.mean_dice());
  EXPECT_TRUE(
      throws_error([&] { eval.add(logits_all.narrow(0, 0, 1), target_all.narrow(0, 0, 1)); },
                   {"DistributedSegmentationEvaluator", "only"}));
}

TEST(SegmentationEval, TwoRanksCountEachSampleOnce) {
  for (SegmentationKind kind : {SegmentationKind::binary, SegmentationKind::multiclass})
    on_threads(2, [kind](auto g) { counts_each_sample_once(g, 7, kind); });
}

TEST(SegmentationEval, MoreRanksAndRanksOfPaddingOnly) {
  for (int ranks : {3, 4})
    on_threads(ranks, [](auto g) { counts_each_sample_once(g, 7, SegmentationKind::multiclass); });
  // 2 samples over 4 ranks: ranks 2 and 3 hold only padding and still join the allreduce.
  on_threads(4, [](auto g) { counts_each_sample_once(g, 2, SegmentationKind::binary); });
}

TEST(SegmentationEval, AllreduceCountsSumsExactlyInIntegers) {
  on_threads(2, [](auto g) {
    nn::SegmentationCounts c(2);
    // Beyond 2^53: an f64 sum would round these.
    const int64_t big = (int64_t{1} << 53) + 1;
    c.intersection = {big, g->rank()};
    c.predicted = {big, 1};
    c.target = {1, 2};
    const nn::SegmentationCounts s = allreduce_counts(c, *g);
    EXPECT_EQ(s.intersection, (std::vector<int64_t>{2 * big, 1}));
    EXPECT_EQ(s.predicted, (std::vector<int64_t>{2 * big, 2}));
    EXPECT_EQ(s.target, (std::vector<int64_t>{2, 4}));
  });
}

TEST(SegmentationEval, BadArguments) {
  DistributedSampler s(4, 1, 0, {.shuffle = Shuffle::off});
  EXPECT_TRUE(throws_error(
      [&] {
        DistributedSegmentationEvaluator(s, {.kind = SegmentationKind::binary, .num_classes = 2});
      },
      {"binary", "one class", "2"}));
  DistributedSegmentationEvaluator e(s, {.kind = SegmentationKind::multiclass, .num_classes = 3});
  EXPECT_TRUE(throws_error(
      [&] {
        e.add(zeros({2, 4, 3}), zeros({2, 3}, {DType::i64}));
      },
      {"DistributedSegmentationEvaluator", "3 classes", "[2, 4, 3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        e.add(zeros({2, 3, 3}), zeros({3, 3}, {DType::i64}));
      },
      {"DistributedSegmentationEvaluator", "[2, 3, 3]", "[3, 3]"}));
}

}  // namespace
}  // namespace rg::parallel
