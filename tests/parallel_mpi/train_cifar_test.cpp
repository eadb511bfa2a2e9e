// train_cifar under mpirun: N processes with batch B each (SyncBatchNorm, linear LR scaling)
// train exactly like one process with batch N·B and N times the learning rate; only rank 0
// writes; an interrupted distributed run resumes (rank 0 reads, the others receive) to the
// same weights; every test image counts once however the test set splits across ranks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "apps/train_cifar/run.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "parallel/horovod.h"
#include "parallel/single_group.h"
#include "tests/apps/tiny_cifar.h"

namespace rg::apps {
namespace {
namespace fs = std::filesystem;
using parallel::world;
using rg::testing::all_close;

// 4 training images per rank and step, one step an epoch: N ranks see the same global batches
// as one process with batch 4·N (the DistributedSampler deals position r + N·i to rank r), and
// three epochs cross two reshuffles. 11 test images never split evenly over 2, 3 or 4 ranks:
// the sampler pads.
//
// Why so few steps: in f32 the ranks round differently from one process (other summation
// orders; SyncBatchNorm combines statistics in f64), by ~1e-7, and this 4-channel net on noise
// images is chaotic: one process changes by up to 2e-2 after 3 steps when its learning rate
// changes by 1e-5 relative (a pre-activation crosses a ReLU's kink). Measured: 3 steps agree
// to 5e-7 for N = 2, 3, 4, while runs of 21 steps parted by 3e-2. The equivalence of each piece
// to ~1e-11 is proved in f64 by tests/parallel/parallel_test_util.h.
TrainConfig distributed_config(const std::string& data, const std::string& out) {
  TrainConfig cfg = tiny_config(data, out);
  cfg.epochs = 3;
  cfg.train_limit = 4 * world().size();
  cfg.batch_size = 4;
  cfg.test_limit = 11;
  cfg.threads = 1;
  cfg.workers = 1;
  cfg.sync_bn = true;
  cfg.lr_scaling = "linear";
  return cfg;
}

// What one process would run for the same global batches: batch N·B, learning rate N·lr.
TrainConfig single_process_config(const std::string& data, const std::string& out) {
  TrainConfig cfg = distributed_config(data, out);
  cfg.batch_size *= world().size();
  cfg.lr *= world().size();
  cfg.lr_scaling = "none";
  cfg.sync_bn = false;
  return cfg;
}

// A folder every rank names the same: rank 0's.
std::string shared_path(const std::string& name) {
  return parallel::broadcast_object(rg::testing::temp_path(name), 0);
}

std::vector<std::string> csv_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(TrainCifarMpi, MatchesOneProcessWithTheGlobalBatch) {
  const std::string data = tiny_cifar("data", 12);  // each rank writes its own copy
  const std::string out = shared_path("ddp");
  if (world().rank() == 0) fs::remove_all(out);
  ASSERT_EQ(run(distributed_config(data, out)), 0);

  // The reference: one process, alone in a world of its own, on every rank.
  const std::string ref = rg::testing::temp_path("one_process");
  fs::remove_all(ref);
  const TrainConfig one_process = single_process_config(data, ref);
  {
    parallel::ScopedThreadWorld alone(std::make_shared<parallel::SingleGroup>());
    ASSERT_EQ(run(one_process), 0);
  }
  world().barrier()->wait();  // rank 0 has written everything

  auto mine = load_safetensors(out + "/last.safetensors");
  auto one = load_safetensors(ref + "/last.safetensors");
  ASSERT_EQ(mine.tensors.size(), one.tensors.size());
  // f32 rounding differences of a few 1e-7 after 3 steps (see distributed_config).
  for (auto& [name, t] : one.tensors)
    EXPECT_TRUE(all_close(mine.tensors.at(name), t, 1e-5, 1e-5)) << name;

  // Metrics are over all ranks: the same test accuracy and loss as one process, every one of
  // the 11 test images counted once.
  const auto lines = csv_lines(out + "/metrics.csv"), ref_lines = csv_lines(ref + "/metrics.csv");
  ASSERT_EQ(lines.size(), 1u + 3u) << "only rank 0 writes the log";
  EXPECT_EQ(mine.metadata.at("train.best_accuracy"), one.metadata.at("train.best_accuracy"));
  EXPECT_EQ(mine.metadata.at("train.step"), one.metadata.at("train.step"));
}

// An interrupted run resumed: rank 0 reads the checkpoint, the others receive it. `amp` "O2"
// adds the loss scaler and the f32 master weights to what must travel.
void resume_matches_straight_run(const std::string& amp) {
  const std::string data = tiny_cifar("data", 12);
  const std::string straight = shared_path("straight"), resumed = shared_path("resumed");
  if (world().rank() == 0) {
    fs::remove_all(straight);
    fs::remove_all(resumed);
  }
  auto config = [&](const std::string& out) {
    TrainConfig cfg = distributed_config(data, out);
    cfg.amp = amp;
    cfg.amp_dtype = "bf16";
    return cfg;
  };
  ASSERT_EQ(run(config(straight)), 0);

  TrainConfig first = config(resumed);
  first.stop_after_epochs = 1;  // interrupted after one epoch
  ASSERT_EQ(run(first), 0);
  manual_seed(1000 + static_cast<uint64_t>(world().rank()));  // fresh processes, any state
  TrainConfig second = config(resumed);
  second.resume = "auto";  // rank 0 finds last.safetensors; the others never look
  ASSERT_EQ(run(second), 0);
  world().barrier()->wait();

  // Had a rank kept its own optimizer state or schedule, its gradients — averaged into rank
  // 0's — would have moved the weights away from the uninterrupted run.
  auto a = load_safetensors(straight + "/last.safetensors").tensors;
  auto b = load_safetensors(resumed + "/last.safetensors").tensors;
  for (auto& [name, t] : a) EXPECT_TRUE(all_close(b.at(name), t, 0, 0)) << name;
}

TEST(TrainCifarMpi, ResumeBroadcastsRankZerosCheckpoint) {
  ASSERT_NO_FATAL_FAILURE(resume_matches_straight_run("O0"));
}

TEST(TrainCifarMpi, ResumeBroadcastsMasterWeightsAndScaler) {
  ASSERT_NO_FATAL_FAILURE(resume_matches_straight_run("O2"));
}

TEST(TrainCifarMpi, BadCheckpointFailsOnEveryRankWithRankZerosError) {
  const std::string data = tiny_cifar("data", 12);
  const std::string out = shared_path("bad"), bad = shared_path("bad.safetensors");
  if (world().rank() == 0) {
    fs::remove_all(out);
    std::ofstream(bad) << "not a checkpoint";
  }
  world().barrier()->wait();
  TrainConfig cfg = distributed_config(data, out);
  cfg.resume = bad;
  EXPECT_TRUE(rg::testing::throws_error([&] { run(cfg); }, {"bad.safetensors"}));
}

}  // namespace
}  // namespace rg::apps
