#include "parallel/segmentation_eval.h"

#include <string>

namespace rg::parallel {

nn::SegmentationCounts allreduce_counts(const nn::SegmentationCounts& local, ProcessGroup& group) {
  const int64_t C = local.num_classes();
  RG_CHECK(C > 0, "allreduce_counts: the counts hold no classes");
  std::vector<int64_t> flat;
  flat.reserve(static_cast<std::size_t>(3 * C));
  for (const auto* v : {&local.intersection, &local.predicted, &local.target})
    flat.insert(flat.end(), v->begin(), v->end());
  // i64, not f64: counts of voxels add up exactly however many there are.
  Tensor t = from_vector<int64_t>(flat, {3 * C}, {DType::i64});
  group.allreduce(t, ReduceOp::sum)->wait();
  const std::vector<int64_t> sum = t.to_vector<int64_t>();
  nn::SegmentationCounts total(C);
  for (int64_t c = 0; c < C; ++c) {
    const auto i = static_cast<std::size_t>(c);
    total.intersection[i] = sum[i];
    total.predicted[i] = sum[static_cast<std::size_t>(C) + i];
    total.target[i] = sum[static_cast<std::size_t>(2 * C) + i];
  }
  return total;
}

DistributedSegmentationEvaluator::DistributedSegmentationEvaluator(
    const DistributedSampler& sampler, SegmentationEvalOptions options)
    : options_(options), cursor_(sampler) {
  RG_CHECK(options.kind == SegmentationKind::multiclass || options.num_classes == 1,
           "DistributedSegmentationEvaluator: binary segmentation counts one class, got "
           "num_classes ",
           options.num_classes);
  local_ = nn::SegmentationCounts(options.num_classes);
}

void DistributedSegmentationEvaluator::add(const Tensor& logits, const Tensor& target) {
  RG_CHECK(logits.defined() && target.defined() && logits.dim() >= 1 && target.dim() >= 1 &&
               logits.size(0) == target.size(0),
           "DistributedSegmentationEvaluator::add: expected logits and targets of one batch "
           "(N, ...), got ",
           logits.defined() ? logits.describe() : std::string("undefined"), " and ",
           target.defined() ? target.describe() : std::string("undefined"));
  const bool binary = options_.kind == SegmentationKind::binary;
  RG_CHECK(binary || (logits.dim() >= 2 && logits.size(1) == options_.num_classes),
           "DistributedSegmentationEvaluator::add: expected logits with ", options_.num_classes,
           " classes in dim 1, got ", logits.describe());
  const int64_t real = cursor_.advance(logits.size(0), "DistributedSegmentationEvaluator::add");
  if (real == 0) return;
  const Tensor x = logits.narrow(0, 0, real), t = target.narrow(0, 0, real);
  local_ += binary ? nn::count_binary(x, t, options_.threshold) : nn::count_multiclass(x, t);
}

}  // namespace rg::parallel
