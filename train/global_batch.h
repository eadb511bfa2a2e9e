#pragma once
// The global batch of a run — ranks × per-rank batch × accumulation steps — and keeping it when
// the run resumes on another number of ranks.
//
// What a run's schedule, learning rate and data order depend on is the global batch, not how it
// is split: with DistributedSampler's interleaving (rank r takes positions r, r + N, ...), the
// optimizer step k of any split of a global batch B covers positions [kB, (k+1)B) of the epoch's
// permutation, so the same samples make every step whatever the number of ranks. So a checkpoint
// records the split it was made with (global_batch_metadata), and a run resuming it keeps B:
//
//   1. the batch and accumulation asked for (--batch-size, --accumulate-steps), if they make B
//      on this many ranks;
//   2. else the checkpoint's accumulation steps, with the per-rank batch recomputed: B / (M·K);
//   3. else the checkpoint's per-rank batch, with the accumulation steps recomputed: B / (M·b);
//   4. else a named error listing the rank counts that work: by 2 or 3, and the other divisors
//      of B, which work with a --batch-size and --accumulate-steps asked for (1).
//
// The run says what changed in one line: "resumed on 4 ranks, was 2: per-rank batch 128 → 64,
// global 256 kept". Then the LR (the schedule's and optimizer's state come from the checkpoint),
// the schedule (the same steps per epoch) and the sampler (the same permutation per epoch)
// continue as if nothing had changed: the weights equal an uninterrupted run's to float order —
// for models without BatchNorm or with SyncBatchNorm (2 keeps the micro-batch, so SyncBN's
// statistics are over the same samples); per-rank BatchNorm normalises over each rank's share,
// which changes with the number of ranks (as in PyTorch).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "parallel/process_group.h"

namespace rg::train {

struct GlobalBatch {
  int64_t ranks = 1;
  int64_t batch_size = 1;        // per rank and micro-batch (--batch-size)
  int64_t accumulate_steps = 1;  // micro-batches per optimizer step (--accumulate-steps)
  int64_t global() const { return ranks * batch_size * accumulate_steps; }
  bool operator==(const GlobalBatch&) const = default;
};

// "2 ranks × batch 128 × 1 accumulation step = 256"
std::string describe(const GlobalBatch& batch);

// What a checkpoint records of the split (keys "batch.ranks", "batch.size",
// "batch.accumulate_steps", "batch.global"), and reading it back: nullopt for a checkpoint
// without it (written before it was recorded); an rg::Error for values that do not add up.
std::map<std::string, std::string> global_batch_metadata(const GlobalBatch& batch);
std::optional<GlobalBatch> recorded_global_batch(const std::map<std::string, std::string>& meta);

struct ContinuedBatch {
  GlobalBatch batch;
  std::string change{};  // the line that says what changed; empty when nothing did
};

// The split on `ranks` ranks that keeps `recorded`'s global batch (the rules above), given the
// split `asked` (its ranks are ignored). Throws rg::Error naming `program`, the global batch,
// why this world size cannot make it and the rank counts that can.
ContinuedBatch continue_global_batch(const GlobalBatch& recorded, int64_t ranks,
                                     const GlobalBatch& asked, const std::string& program);
// The rank counts that keep `recorded`'s global batch by rule 2 or 3, ascending.
std::vector<int64_t> rank_counts_that_work(const GlobalBatch& recorded);

// At the start of a run: `checkpoint` (empty: a fresh start, `asked` as it is) is read on rank 0
// and every rank gets the same split, or the same error. Rank 0 prints the change line; for a
// checkpoint that records no split (an older one) it takes `asked` and says so.
GlobalBatch resume_global_batch(const std::string& checkpoint, const GlobalBatch& asked,
                                parallel::ProcessGroup& group, const std::string& program);

// Optimizer steps in an epoch of `batches` loader batches (micro-batches): a last step may hold
// fewer micro-batches than the others.
int64_t optimizer_steps(int64_t batches, int64_t accumulate_steps);

}  // namespace rg::train
