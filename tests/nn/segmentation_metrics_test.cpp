// nn/segmentation_metrics.h: counts against hand-counted masks, the empty-class rule, counts
// that add up over batches to the counts of the whole set, and bad inputs.

#include "nn/segmentation_metrics.h"

#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg::nn {
namespace {

using rg::testing::throws_error;

TEST(SegmentationMetrics, BinaryCountsAtAThreshold) {
  // σ(logit) > 0.5 ⇔ logit > 0: predicted = {0, 2, 3}; target (> 0.5) = {2, 3, 4}.
  const Tensor logits = from_vector<float>({1, -1, 2, 0.5f, -3, -0.1f}, {1, 1, 2, 3});
  const Tensor target = from_vector<float>({0, 0, 1, 1, 0.8f, 0.2f}, {1, 1, 2, 3});
  SegmentationCounts c = count_binary(logits, target);
  ASSERT_EQ(c.num_classes(), 1);
  EXPECT_EQ(c.intersection[0], 2);
  EXPECT_EQ(c.predicted[0], 3);
  EXPECT_EQ(c.target[0], 3);
  EXPECT_DOUBLE_EQ(c.dice(0), 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(c.iou(0), 2.0 / 4.0);
  // A higher threshold: σ(x) > 0.8 ⇔ x > 1.386: only element 2 is predicted.
  c = count_binary(logits, target, 0.8);
  EXPECT_EQ(c.predicted[0], 1);
  EXPECT_EQ(c.intersection[0], 1);
}

TEST(SegmentationMetrics, MulticlassCountsByArgMaxFirstOnTies) {
  // (N=1, C=3, 4 positions): arg-max per position = 0, 2, 1, 0 (position 3 ties 0 and 1: 0).
  const Tensor logits =
      from_vector<double>({5, 0, 1, 2, 0, 1, 3, 2, 0, 2, 0, 0}, {1, 3, 4}, {DType::f64});
  const Tensor target = from_vector<int64_t>({0, 2, 2, 1}, {1, 4}, {DType::i64});
  const SegmentationCounts c = count_multiclass(logits, target);
  ASSERT_EQ(c.num_classes(), 3);
  EXPECT_EQ(c.predicted, (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(c.target, (std::vector<int64_t>{1, 1, 2}));
  EXPECT_EQ(c.intersection, (std::vector<int64_t>{1, 0, 1}));
  EXPECT_DOUBLE_EQ(c.dice(0), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(c.dice(1), 0.0);
  EXPECT_DOUBLE_EQ(c.iou(2), 1.0 / 2.0);
  EXPECT_DOUBLE_EQ(c.mean_dice(), (2.0 / 3.0 + 0.0 + 2.0 / 3.0) / 3.0);
}

// The masks themselves, by the counts' rules: what predict writes is what Dice scored.
TEST(SegmentationMetrics, PredictedMasksFollowTheCountsRules) {
  const Tensor binary = from_vector<float>({1, -1, 2, 0.5f, -3, 0}, {1, 2, 3});
  EXPECT_EQ(predict_binary(binary).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1, 1, 0, 0}));
  EXPECT_EQ(predict_binary(binary).dtype(), DType::u8);
  EXPECT_EQ(predict_binary(binary, 0.8).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 0, 1, 0, 0, 0}));
  const Tensor multi =
      from_vector<double>({5, 0, 1, 2, 0, 1, 3, 2, 0, 2, 0, 0}, {1, 3, 4}, {DType::f64});
  const Tensor predicted = predict_multiclass(multi);
  EXPECT_EQ(predicted.shape(), (Shape{1, 4}));
  EXPECT_EQ(predicted.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1, 0}));  // ties: first
  // Counting a predicted mask against itself finds every pixel of every class.
  const SegmentationCounts self = count_multiclass(multi, predicted.to(DType::i64));
  EXPECT_EQ(self.intersection, self.target);
  EXPECT_EQ(self.predicted, self.target);
  EXPECT_TRUE(throws_error([] { predict_multiclass(zeros({1, 257, 2})); }, {"C in [1, 256]"}));
  EXPECT_TRUE(throws_error([] { predict_binary(zeros({2}, {DType::i64})); }, {"floating"}));
}

TEST(SegmentationMetrics, EmptyClassScoresOne) {
  const Tensor logits = full({2, 1, 3, 3}, -4.0);  // nothing predicted
  const Tensor target = zeros({2, 1, 3, 3});       // nothing to find
  const SegmentationCounts c = count_binary(logits, target);
  EXPECT_TRUE(c.empty(0));
  EXPECT_EQ(c.dice(0), 1.0);
  EXPECT_EQ(c.iou(0), 1.0);
  // Predicted but absent, or present but missed: 0, not empty.
  const SegmentationCounts missed = count_binary(logits, ones({2, 1, 3, 3}));
  EXPECT_FALSE(missed.empty(0));
  EXPECT_EQ(missed.dice(0), 0.0);
}

TEST(SegmentationMetrics, CountsOfBatchesAddUpToTheWholeSet) {
  const Tensor logits = randn({5, 4, 3, 2, 3});
  const Tensor target = from_vector<int64_t>(
      [] {
        std::vector<int64_t> v(5 * 18);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>((i * 7) % 4);
        return v;
      }(),
      {5, 3, 2, 3}, {DType::i64});
  SegmentationCounts sum;
  for (int64_t b = 0; b < 5; b += 2) {
    const int64_t n = std::min<int64_t>(2, 5 - b);
    sum += count_multiclass(logits.narrow(0, b, n), target.narrow(0, b, n));
  }
  const SegmentationCounts all = count_multiclass(logits, target);
  EXPECT_EQ(sum.intersection, all.intersection);
  EXPECT_EQ(sum.predicted, all.predicted);
  EXPECT_EQ(sum.target, all.target);
  int64_t positions = 0;
  for (int64_t t : all.target) positions += t;
  EXPECT_EQ(positions, 5 * 18);
}

TEST(SegmentationMetrics, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        count_binary(zeros({2, 3}), zeros({2, 4}));
      },
      {"count_binary", "[2, 3] f32 cpu", "[2, 4] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        count_binary(zeros({2, 3}), zeros({2, 3}), 1.0);
      },
      {"count_binary", "threshold", "(0, 1)"}));
  EXPECT_TRUE(throws_error(
      [] {
        count_multiclass(zeros({2, 3, 4}), zeros({2, 4}));
      },
      {"count_multiclass", "i64", "[2, 4] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        count_multiclass(zeros({1, 3, 2}), from_vector<int64_t>({0, 3}, {1, 2}, {DType::i64}));
      },
      {"count_multiclass", "class 3", "[0, 3)"}));
  EXPECT_TRUE(throws_error(
      [] {
        SegmentationCounts a(2);
        a += SegmentationCounts(3);
      },
      {"SegmentationCounts", "3 classes", "2"}));
  EXPECT_TRUE(throws_error([] { SegmentationCounts(2).dice(2); }, {"class 2", "[0, 2)"}));
}

}  // namespace
}  // namespace rg::nn
