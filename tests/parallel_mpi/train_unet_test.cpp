// train_unet under mpirun: a distributed 3-D run with SyncBatchNorm, interrupted and resumed
// (rank 0 reads the checkpoint, the others receive it), ends with the weights of an
// uninterrupted distributed run. (The shape of this test comes from a helper's parallel draft
// of train_unet.)
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "apps/train_unet/run.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "nn/segmentation_metrics.h"
#include "parallel/horovod.h"
#include "tests/apps/segmentation_files.h"
#include "tests/support/fixtures.h"
#include "train/predict.h"

namespace rg::apps {
namespace {
namespace fs = std::filesystem;
using parallel::world;
using rg::testing::all_close;

UnetConfig distributed_unet(const std::string& out) {
  UnetConfig c;
  c.data = "shapes3d";
  c.image_size = {4, 8, 8};
  c.train_size = 4 * world().size();
  c.test_size = 5;  // never splits evenly over 2, 3 or 4 ranks: the sampler pads
  c.width = 4;
  c.depth = 2;
  c.epochs = 3;
  c.batch_size = 2;
  c.threads = 1;
  c.workers = 1;
  c.sync_bn = true;
  c.out = out;
  c.progress = false;
  return c;
}

std::string shared_path(const std::string& name) {
  return parallel::broadcast_object(rg::testing::temp_path(name), 0);
}

TEST(TrainUnetMpi, ResumedDistributedRunEndsWithTheSameWeights) {
  const std::string straight = shared_path("unet_straight"), resumed = shared_path("unet_resumed");
  if (world().rank() == 0) {
    fs::remove_all(straight);
    fs::remove_all(resumed);
  }
  ASSERT_EQ(run_unet(distributed_unet(straight)), 0);
  UnetConfig first = distributed_unet(resumed);
  first.stop_after_epochs = 1;
  ASSERT_EQ(run_unet(first), 0);
  manual_seed(99 + static_cast<uint64_t>(world().rank()));  // the resume must restore the RNG
  UnetConfig second = distributed_unet(resumed);
  second.resume = "auto";
  ASSERT_EQ(run_unet(second), 0);
  if (world().rank() == 0) {
    const auto a = load_safetensors(straight + "/last.safetensors");
    const auto b = load_safetensors(resumed + "/last.safetensors");
    ASSERT_EQ(a.tensors.size(), b.tensors.size());
    for (auto& [name, t] : a.tensors) EXPECT_TRUE(all_close(b.tensors.at(name), t, 0, 0)) << name;
  }
}

// The user's PNG files under DDP with SyncBatchNorm: 3 validation images never split evenly
// over 2, 3 or 4 ranks, so the sampler pads; validation must still count each image once — its
// Dice and IoU per class are those of rank 0's predict over the whole validation set.
TEST(TrainUnetMpi, FolderDataValidatesEveryImageOnce) {
  const std::string root = shared_path("unet_mpi_files");
  if (world().rank() == 0) testing::png_split("unet_mpi_files");  // the same path on every rank
  world().barrier()->wait();
  UnetConfig c;
  c.data = "folder";
  c.data_root = root;
  c.classes = "multiclass";
  c.channels = 3;
  c.image_size = {32, 32};
  c.depth = 2;
  c.width = 4;
  c.epochs = 1;
  c.batch_size = 2;
  c.threads = 1;
  c.workers = 1;
  c.sync_bn = true;
  c.progress = false;
  c.out = shared_path("unet_mpi_files_run");
  if (world().rank() == 0) fs::remove_all(c.out);
  ASSERT_EQ(run_unet(c), 0);
  if (world().rank() != 0) return;
  const train::Predictor predictor({.checkpoint = c.out + "/last.safetensors"});
  nn::SegmentationCounts counts(4);
  for (const auto& e : fs::directory_iterator(root + "/val/images")) {
    const Tensor p = predictor.segment(e.path().string());
    const Tensor t = data::read_mask_file(root + "/val/masks/" + e.path().filename().string(), 4);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const uint8_t pv = p.data<uint8_t>()[i], tv = t.data<uint8_t>()[i];
      counts.predicted[pv] += 1;
      counts.target[tv] += 1;
      counts.intersection[tv] += pv == tv;
    }
  }
  const auto csv = rg::testing::read_csv(c.out + "/metrics.csv");
  const std::vector<std::string> names = {"background", "disc", "box", "triangle"};
  for (std::size_t k = 0; k < names.size(); ++k)
    for (std::size_t i = 0; i < csv[0].size(); ++i)
      if (csv[0][i] == "test_dice_" + names[k]) {
        char expected[32];
        std::snprintf(expected, sizeof expected, "%.6g", counts.dice(static_cast<int64_t>(k)));
        EXPECT_EQ(csv[1][i], expected) << names[k];
      }
}

}  // namespace
}  // namespace rg::apps
