#pragma once
// DistributedSampler: each rank's share of an epoch, PyTorch's semantics exactly.
//
//   epoch order:  p = random_permutation(n, seed, epoch) with shuffle (the same on every rank:
//                 a function of seed and epoch only), else 0, 1, ..., n−1
//   pad  (default): S = ceil(n / N) samples per rank; p is extended to N·S by repeating it
//                 from the start, so every rank gets the same number of batches
//   drop:         S = floor(n / N); the last n − N·S samples of p are left out this epoch
//   rank r takes  p[r], p[r + N], p[r + 2N], ...  (S of them)
//
// Position k of rank r's list is global position r + k·N, a padded duplicate when that is
// >= n. Duplicates are therefore always at the end of a rank's list: positions
// [0, num_real_samples()) are real. Training does not mind a few repeated samples, but
// evaluation must count every test sample once: DistributedEvaluator skips the duplicates
// and sums the totals over ranks.
//
// Forgetting set_epoch() repeats the same shuffle every epoch (DataLoader::start_epoch calls
// it); iterating the same epoch twice with shuffle on prints a warning to stderr, once.

#include <cstdint>
#include <optional>
#include <vector>

#include "data/sampler.h"
#include "parallel/process_group.h"

namespace rg::parallel {

enum class Shuffle { off, on };
enum class LastSamples { pad, drop };  // PyTorch's drop_last = false / true

struct DistributedSamplerOptions {
  Shuffle shuffle = Shuffle::on;
  uint64_t seed = 0;  // must be the same on every rank
  LastSamples last = LastSamples::pad;
};

class DistributedSampler final : public data::Sampler {
 public:
  DistributedSampler(int64_t dataset_size, int num_replicas, int rank,
                     DistributedSamplerOptions options = {});
  DistributedSampler(int64_t dataset_size, const ProcessGroup& group,
                     DistributedSamplerOptions options = {});

  // This rank's indices for the current epoch, padded duplicates included.
  std::vector<int64_t> indices() const override;
  int64_t size() const override { return num_samples_; }  // the same on every rank
  void set_epoch(int64_t epoch) override;

  int num_replicas() const { return num_replicas_; }
  int rank() const { return rank_; }
  int64_t dataset_size() const { return dataset_size_; }
  int64_t total_size() const { return num_samples_ * num_replicas_; }  // over all ranks
  // Positions [0, num_real_samples()) of this rank's list are real samples, the rest padding.
  int64_t num_real_samples() const;
  bool is_padding(int64_t position) const;

 private:
  int64_t dataset_size_;
  int num_replicas_, rank_;
  DistributedSamplerOptions options_;
  int64_t num_samples_;
  mutable std::optional<int64_t> last_iterated_epoch_;
  mutable bool warned_ = false;
};

// Walks one rank's list of a DistributedSampler epoch in order, batch by batch, and says how
// many of the next B samples are real: always a prefix of the batch, since the padded
// duplicates sit at the end of a rank's list. Shared by the evaluators (this one, and the
// segmentation one of parallel/segmentation_eval.h) so that none counts padding.
class RealSampleCursor {
 public:
  explicit RealSampleCursor(const DistributedSampler& sampler);
  // Moves past the next b samples; returns how many of them are real. `who` names the caller
  // in the error raised when more samples arrive than the sampler gives this rank.
  int64_t advance(int64_t b, const char* who);
  int64_t position() const { return position_; }  // samples seen so far, padding included

 private:
  int64_t real_, size_;
  int64_t position_ = 0;
};

// Totals of an evaluation; summed over ranks they count every test sample exactly once.
struct EvalTotals {
  int64_t correct = 0;
  double loss_sum = 0;
  int64_t count = 0;
  double accuracy() const { return count ? static_cast<double>(correct) / count : 0.0; }
  double mean_loss() const { return count ? loss_sum / static_cast<double>(count) : 0.0; }
};

// Accumulates one rank's evaluation over an epoch of a DistributedSampler, batch by batch in
// sampler order (as the DataLoader delivers them), leaving out the padded duplicates; then
// all_ranks() sums the totals over the group.
//
//   DistributedEvaluator eval(sampler);
//   loader.start_epoch(0);
//   while (auto b = loader.next()) eval.add(model(b->images), b->labels);
//   EvalTotals t = eval.all_ranks(group);     // t.count == test set size, on every rank
class DistributedEvaluator {
 public:
  explicit DistributedEvaluator(const DistributedSampler& sampler);
  // The next B samples: logits (B, K) (any floating dtype), labels (B) i64. Adds the
  // cross-entropy and whether the arg-max (first on ties) is the label.
  void add(const Tensor& logits, const Tensor& labels);
  // The next loss.size() samples, for any other metric: per-sample loss and correctness.
  void add(const std::vector<double>& loss, const std::vector<bool>& correct);
  const EvalTotals& local() const { return local_; }
  int64_t position() const { return cursor_.position(); }  // padding included
  // Sums over the group (one allreduce of three f64 values). Every rank must call it.
  EvalTotals all_ranks(ProcessGroup& group) const;

 private:
  RealSampleCursor cursor_;
  EvalTotals local_;
};

}  // namespace rg::parallel
