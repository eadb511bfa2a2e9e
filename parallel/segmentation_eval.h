#pragma once
// Dice and IoU over all ranks: each rank counts its share of the test set
// (nn/segmentation_metrics.h's integer counts per class), leaving out the padded duplicates of
// its DistributedSampler (RealSampleCursor, as DistributedEvaluator), and the counts are
// summed exactly — as i64, one allreduce — so every sample is counted once and the scores are
// those of one process over the whole set.
//
//   DistributedSegmentationEvaluator eval(sampler, {.kind = SegmentationKind::binary});
//   loader.start_epoch(0);
//   while (auto b = loader.next()) eval.add(model(b->images), b->masks);
//   nn::SegmentationCounts all = eval.all_ranks(group);   // the same on every rank
//   all.dice(0), all.mean_iou(), ...

#include "nn/segmentation_metrics.h"
#include "parallel/distributed_sampler.h"
#include "parallel/process_group.h"

namespace rg::parallel {

// The counts summed over the group; every rank must call it with counts of the same number of
// classes (one allreduce of 3·C i64 values).
nn::SegmentationCounts allreduce_counts(const nn::SegmentationCounts& local, ProcessGroup& group);

enum class SegmentationKind { binary, multiclass };

struct SegmentationEvalOptions {
  SegmentationKind kind = SegmentationKind::binary;
  int64_t num_classes = 1;  // multiclass: C (the logits' dim 1); binary: 1
  double threshold = 0.5;   // binary: predicted where σ(logit) > threshold
};

class DistributedSegmentationEvaluator {
 public:
  DistributedSegmentationEvaluator(const DistributedSampler& sampler,
                                   SegmentationEvalOptions options = {});
  // The next B samples of this rank's list, in sampler order: logits and targets as
  // nn::count_binary / nn::count_multiclass take them. Padded duplicates are skipped.
  void add(const Tensor& logits, const Tensor& target);
  const nn::SegmentationCounts& local() const { return local_; }
  int64_t position() const { return cursor_.position(); }
  nn::SegmentationCounts all_ranks(ProcessGroup& group) const {
    return allreduce_counts(local_, group);
  }

 private:
  SegmentationEvalOptions options_;
  RealSampleCursor cursor_;
  nn::SegmentationCounts local_;
};

}  // namespace rg::parallel
