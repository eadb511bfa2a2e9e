// train_unet under mpirun: a distributed 3-D run with SyncBatchNorm, interrupted and resumed
// (rank 0 reads the checkpoint, the others receive it), ends with the weights of an
// uninterrupted distributed run. (The shape of this test comes from a helper's parallel draft
// of train_unet.)
#include <gtest/gtest.h>

#include <filesystem>

#include "apps/train_unet/run.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "parallel/horovod.h"
#include "tests/support/fixtures.h"

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

}  // namespace
}  // namespace rg::apps
