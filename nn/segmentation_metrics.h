#pragma once
// Dice and IoU per class, from integer counts — so that counts from several batches, devices
// or ranks add up exactly and the scores are those of the whole data set (not a mean of
// per-batch scores). parallel/segmentation_eval.h sums them over ranks.
//
//   count_binary(logits, target, threshold): one class, the foreground.
//     logits, target (N, *) the same shape; predicted where σ(logit) > threshold, target
//     where t > 0.5 (pytorch-nested-unet's rule for soft masks).
//   count_multiclass(logits, target): C classes, background included.
//     logits (N, C, *), target (N, *) i64 in [0, C); predicted class = arg-max over C (the
//     first on ties).
//   per class c: intersection I_c = #(predicted c and target c), predicted P_c, target T_c
//   Dice_c = 2·I_c / (P_c + T_c),   IoU_c = I_c / (P_c + T_c − I_c)
//
// An empty class — neither in the target nor predicted (P_c = T_c = 0) — scores Dice = IoU = 1:
// nothing to find and nothing found is a perfect answer. This is the limit of the smoothed
// scores of pytorch-nested-unet's metrics.py ((0 + ε)/(0 + ε)) and MONAI's
// ignore_empty=False; code that wants such classes left out reads empty(c) and skips them.
// The counts are computed on the host (evaluation reads the predictions back anyway).

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace rg::nn {

struct SegmentationCounts {
  std::vector<int64_t> intersection, predicted, target;  // per class

  SegmentationCounts() = default;
  explicit SegmentationCounts(int64_t num_classes);
  int64_t num_classes() const { return static_cast<int64_t>(intersection.size()); }
  SegmentationCounts& operator+=(const SegmentationCounts& other);

  bool empty(int64_t c) const;  // neither predicted nor in the target
  double dice(int64_t c) const;
  double iou(int64_t c) const;
  double mean_dice() const;  // over every class, empty ones scoring 1
  double mean_iou() const;
};

SegmentationCounts count_binary(const Tensor& logits, const Tensor& target, double threshold = 0.5);
SegmentationCounts count_multiclass(const Tensor& logits, const Tensor& target);

// The predicted mask itself, by the rules the counts use, as u8 class indices on the host —
// what a validation scored is what `predict` writes:
//   predict_binary(logits (N, *)) -> (N, *): 1 where σ(logit) > threshold, else 0
//   predict_multiclass(logits (N, C, *)) -> (N, *): the arg-max over C, the first on ties
//     (C <= 256: a u8 mask's classes)
Tensor predict_binary(const Tensor& logits, double threshold = 0.5);
Tensor predict_multiclass(const Tensor& logits);

}  // namespace rg::nn
