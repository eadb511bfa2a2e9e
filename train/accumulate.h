#pragma once
// Gradient accumulation: K micro-batches, one optimizer step, the same step as one K-times-larger
// batch (--accumulate-steps K). Horovod's backward_passes_per_step, PyTorch's accumulation under
// DDP's no_sync().
//
//   weights = micro_batch_weights(sizes);                 // n_i / Σ n
//   for (i = 0; i < K; ++i) {
//     const MicroBatch which = i + 1 < K ? MicroBatch::more_follow : MicroBatch::last;
//     Tensor loss;
//     { MicroBatchForward in(ddp, which); loss = loss_of(model(x_i)); }
//     backward_micro_batch(loss, weights[i], which, ddp, amp);
//   }
//   amp.unscale(opt); clip...; amp.step(opt); amp.update(); schedule.step();
//
// Why it equals the larger batch: each micro-batch's loss is the mean over its n_i samples; the
// larger batch's is the mean over all Σ n of them, = Σ_i (n_i / Σ n) · mean_i. So backward of
// each mean loss times its weight adds up, in the parameters' .grad, to the larger batch's
// gradient (to float order: the same terms summed in another order; the last micro-batch may be
// smaller, which the weights account for). Under DDP every micro-batch but the last runs under
// no_sync(): no allreduce, the gradients accumulate locally, and the last backward averages the
// accumulated sums across ranks — one allreduce per optimizer step, as one larger batch. Under
// AMP O2 the 16-bit gradients stay in the model until then (MasterGrads::defer), so that DDP
// averages all of them — summed in 16 bits meanwhile, as Apex's O2 and PyTorch's half model
// under no_sync() sum them (K − 1 more roundings of scaled gradients; without DDP they move to
// the f32 masters after each micro-batch). ZeRO-1 reduce-scatters DDP's buckets in that same
// last backward.
// The loss scaler unscales, checks and updates once per optimizer step, on the accumulated
// gradients. BatchNorm normalises each micro-batch with its own statistics (as PyTorch does):
// the larger batch is matched exactly only by models without BatchNorm.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "optim/amp.h"
#include "parallel/ddp.h"

namespace rg::train {

// n_i / Σ n for each micro-batch size n_i (all >= 0, their sum > 0).
std::vector<double> micro_batch_weights(const std::vector<int64_t>& sizes);

enum class MicroBatch { more_follow, last };

// While it lives, the forward passes run belong to a micro-batch: under DDP (ddp: null without)
// they run under no_sync() unless it is the step's last, so that only the last backward
// synchronises (DDP decides at forward time).
class MicroBatchForward {
 public:
  MicroBatchForward(parallel::DistributedDataParallel* ddp, MicroBatch which);
  MicroBatchForward(const MicroBatchForward&) = delete;
  MicroBatchForward& operator=(const MicroBatchForward&) = delete;

 private:
  std::optional<parallel::DistributedDataParallel::NoSync> no_sync_;
};

// Backward of the micro-batch's mean loss × weight through amp (scaled by the loss scale under
// O1-O3; under O2 with DDP the 16-bit gradients stay in the model until the last micro-batch).
void backward_micro_batch(const Tensor& loss, double weight, MicroBatch which,
                          parallel::DistributedDataParallel* ddp, MixedPrecision& amp);

}  // namespace rg::train
