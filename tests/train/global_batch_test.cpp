// train/global_batch.h: what a checkpoint records of its run's split, and the split a resumed
// run takes on another number of ranks — keeping the global batch, or refusing by name. The
// runs that resume N -> M and end where an uninterrupted run ends are
// tests/parallel_mpi/resume_elsewhere.sh (CTest parallel_mpi.resume_*).
#include "train/global_batch.h"

#include <gtest/gtest.h>

#include "core/safetensors.h"
#include "core/tensor.h"
#include "parallel/single_group.h"
#include "tests/support/fixtures.h"

namespace rg::train {
namespace {
using rg::testing::throws_error;

TEST(GlobalBatch, TheCheckpointRecordsTheSplit) {
  const GlobalBatch b{.ranks = 2, .batch_size = 128, .accumulate_steps = 3};
  EXPECT_EQ(b.global(), 768);
  EXPECT_EQ(describe(b), "2 ranks × batch 128 × 3 accumulation steps = 768");
  EXPECT_EQ(describe({1, 64, 1}), "1 rank × batch 64 × 1 accumulation step = 64");
  const auto meta = global_batch_metadata(b);
  EXPECT_EQ(meta.at("batch.global"), "768");
  EXPECT_EQ(recorded_global_batch(meta), b);
  EXPECT_EQ(recorded_global_batch({{"config", "{}"}}), std::nullopt);  // an older checkpoint
}

TEST(GlobalBatch, ARecordThatDoesNotAddUpIsAnError) {
  auto meta = global_batch_metadata({2, 128, 1});
  meta["batch.global"] = "512";
  EXPECT_TRUE(throws_error([&] { recorded_global_batch(meta); }, {"global batch 512", "= 256"}));
  meta = global_batch_metadata({2, 128, 1});
  meta["batch.size"] = "12x";
  EXPECT_TRUE(throws_error([&] { recorded_global_batch(meta); }, {"batch.size", "12x"}));
  meta.erase("batch.size");
  EXPECT_TRUE(throws_error([&] { recorded_global_batch(meta); }, {"without 'batch.size'"}));
}

TEST(GlobalBatch, ANewNumberOfRanksRecomputesThePerRankBatch) {
  const GlobalBatch was{2, 128, 1};
  const ContinuedBatch on4 = continue_global_batch(was, 4, {1, 128, 1}, "app");
  EXPECT_EQ(on4.batch, (GlobalBatch{4, 64, 1}));
  EXPECT_EQ(on4.change, "resumed on 4 ranks, was 2: per-rank batch 128 → 64, global 256 kept");
  const ContinuedBatch on1 = continue_global_batch(was, 1, {1, 128, 1}, "app");
  EXPECT_EQ(on1.batch, (GlobalBatch{1, 256, 1}));
  EXPECT_EQ(on1.change, "resumed on 1 rank, was 2: per-rank batch 128 → 256, global 256 kept");
  // The same world: nothing to say.
  const ContinuedBatch same = continue_global_batch(was, 2, {1, 128, 1}, "app");
  EXPECT_EQ(same.batch, was);
  EXPECT_EQ(same.change, "");
}

TEST(GlobalBatch, TheAccumulationStepsWhenThePerRankBatchCannot) {
  // 3 x 4 x 2 = 24 on 4 ranks: 24 / (4 x 2) = 3 keeps the accumulation.
  EXPECT_EQ(continue_global_batch({3, 4, 2}, 4, {1, 4, 2}, "app").batch, (GlobalBatch{4, 3, 2}));
  // 2 x 3 x 4 = 24 on 8 ranks: 24 / (8 x 4) is no integer; 24 / (8 x 3) = 1 accumulation step.
  const ContinuedBatch c = continue_global_batch({2, 3, 4}, 8, {1, 3, 4}, "app");
  EXPECT_EQ(c.batch, (GlobalBatch{8, 3, 1}));
  EXPECT_EQ(c.change, "resumed on 8 ranks, was 2: accumulation steps 4 → 1, global 24 kept");
}

TEST(GlobalBatch, ASplitAskedForIsTakenWhenItKeepsTheGlobalBatch) {
  // Fewer ranks, the same memory per rank: the per-rank batch kept, accumulation asked for.
  const ContinuedBatch c = continue_global_batch({4, 64, 1}, 2, {1, 64, 2}, "app");
  EXPECT_EQ(c.batch, (GlobalBatch{2, 64, 2}));
  EXPECT_EQ(c.change, "resumed on 2 ranks, was 4: accumulation steps 1 → 2, global 256 kept");
  // Asked for a split that does not make the global batch: the run's is kept, saying so.
  const ContinuedBatch kept = continue_global_batch({2, 128, 1}, 2, {1, 32, 1}, "app");
  EXPECT_EQ(kept.batch, (GlobalBatch{2, 128, 1}));
  EXPECT_EQ(kept.change,
            "(--batch-size 32 --accumulate-steps 1 asked for 64 a step; the run keeps 256: 2 "
            "ranks × batch 128 × 1 accumulation step = 256)");
}

TEST(GlobalBatch, AWorldSizeThatDividesNeitherIsRefusedListingTheOnesThatWork) {
  EXPECT_EQ(rank_counts_that_work({2, 6, 1}), (std::vector<int64_t>{1, 2, 3, 4, 6, 12}));
  EXPECT_TRUE(throws_error(
      [] {
        continue_global_batch({2, 6, 1}, 5, {1, 6, 1}, "train_cifar");
      },
      {"train_cifar: cannot resume on 5 ranks", "global batch of 12",
       "2 ranks × batch 6 × 1 accumulation step", "Rank counts that work: 1, 2, 3, 4, 6, 12."}));
  // With accumulation, per-rank batch or accumulation may give way.
  // 12 = 1 x 4 x 3: 12 / 3m for m = 1, 2, 4 (the batch recomputed), 12 / 4m for m = 1, 3 (the
  // accumulation).
  EXPECT_EQ(rank_counts_that_work({1, 4, 3}), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_TRUE(throws_error(
      [] {
        continue_global_batch({1, 4, 3}, 5, {1, 4, 3}, "app");
      },
      {"5 ranks", "12/15", "12/20",
       "Rank counts that work: 1, 2, 3, 4; with --batch-size B --accumulate-steps K such that "
       "ranks × B × K = 12, also 6, 12."}));
}

TEST(GlobalBatch, AResumeReadsTheSplitFromTheCheckpointAndSaysWhatChanged) {
  parallel::SingleGroup one;
  const std::string path = rg::testing::temp_path("global_batch.safetensors");
  std::map<std::string, std::string> meta = global_batch_metadata({2, 6, 1});
  save_safetensors(path, {{"w", zeros({1})}}, meta);
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(resume_global_batch(path, {1, 6, 1}, one, "app"), (GlobalBatch{1, 12, 1}));
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "resumed on 1 rank, was 2: per-rank batch 6 → 12, global 12 kept\n");
  // A checkpoint from before the split was recorded: the split asked, said so.
  save_safetensors(path, {{"w", zeros({1})}}, {{"config", "{}"}});
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(resume_global_batch(path, {1, 6, 2}, one, "app"), (GlobalBatch{1, 6, 2}));
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "the checkpoint does not record its global batch (written before ringgrad recorded "
            "it): resuming with the split asked, 1 rank × batch 6 × 2 accumulation steps = 12\n");
  // A fresh start: nothing to say.
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(resume_global_batch("", {1, 6, 2}, one, "app"), (GlobalBatch{1, 6, 2}));
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
}

TEST(GlobalBatch, OptimizerStepsCountMicroBatches) {
  EXPECT_EQ(optimizer_steps(16, 1), 16);
  EXPECT_EQ(optimizer_steps(16, 4), 4);
  EXPECT_EQ(optimizer_steps(17, 4), 5);  // the last step holds one micro-batch
  EXPECT_EQ(optimizer_steps(3, 4), 1);
  EXPECT_TRUE(throws_error([] { optimizer_steps(3, 0); }, {"accumulate_steps"}));
}

}  // namespace
}  // namespace rg::train
