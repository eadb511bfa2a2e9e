#include "train/accumulate.h"

#include "core/error.h"
#include "ops/ops.h"

namespace rg::train {

std::vector<double> micro_batch_weights(const std::vector<int64_t>& sizes) {
  int64_t total = 0;
  for (int64_t n : sizes) {
    RG_CHECK(n >= 0, "gradient accumulation: a micro-batch of ", n, " samples");
    total += n;
  }
  RG_CHECK(total > 0, "gradient accumulation: ", sizes.size(), " micro-batches hold no sample");
  std::vector<double> weights;
  weights.reserve(sizes.size());
  for (int64_t n : sizes) weights.push_back(static_cast<double>(n) / static_cast<double>(total));
  return weights;
}

MicroBatchForward::MicroBatchForward(parallel::DistributedDataParallel* ddp, MicroBatch which) {
  if (ddp && which == MicroBatch::more_follow) no_sync_.emplace(*ddp);
}

void backward_micro_batch(const Tensor& loss, double weight, MicroBatch which,
                          parallel::DistributedDataParallel* ddp, MixedPrecision& amp) {
  const bool more = which == MicroBatch::more_follow;
  // A weight of 1 (one micro-batch, or the whole step) multiplies nothing: the step without
  // accumulation is the same graph as before it existed.
  amp.backward(weight == 1.0 ? loss : mul(loss, weight),
               ddp && more ? MasterGrads::defer : MasterGrads::move);
}

}  // namespace rg::train
