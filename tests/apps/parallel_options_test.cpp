// train_cifar's data-parallel flags (--dp-devices, --backend, --grad-compression) and the
// decisions behind them (train/world.h): which device each rank and replica takes, by local
// rank × GPUs, and when two ranks on one GPU are refused before NCCL is ever called.
#include <gtest/gtest.h>

#include "apps/train_cifar/config.h"
#include "parallel/host_staged_group.h"
#include "parallel/thread_group.h"
#include "tests/support/fixtures.h"
#include "train/world.h"

namespace rg::apps {
namespace {
using rg::testing::throws_error;
using train::GpuBackend;
using train::RankPlacement;

train::CommandLine<TrainConfig> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "train_cifar");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return train_cifar_options().parse(static_cast<int>(argv.size()), argv.data());
}

TEST(TrainCifarParallelFlags, ParseSaveAndRefuseBadValues) {
  const TrainConfig defaults = parse({}).config;
  EXPECT_EQ(defaults.backend, "auto");
  EXPECT_EQ(defaults.dp_devices, "");
  EXPECT_EQ(defaults.grad_compression, "none");
  const TrainConfig c =
      parse({"--backend", "mpi", "--dp-devices", "cuda:0,cuda:0", "--grad-compression", "fp16"})
          .config;
  EXPECT_EQ(c.backend, "mpi");
  EXPECT_EQ(c.dp_devices, "cuda:0,cuda:0");
  EXPECT_EQ(c.grad_compression, "fp16");
  EXPECT_EQ(c.to_json()["dp_devices"], "cuda:0,cuda:0");  // kept in the checkpoint's config
  EXPECT_EQ(parse({"--set", "backend=nccl"}).config.backend, "nccl");
  EXPECT_TRUE(throws_error([] { parse({"--backend", "gloo"}); }, {"backend", "auto, nccl or mpi"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--grad-compression", "int8"});
      },
      {"grad_compression must be none, fp16 or bf16", "int8"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--dp-devices", "cuda:0,cpu:1"});
      },
      {"--dp-devices 'cuda:0,cpu:1'", "cpu:1 is not of cuda:0's kind"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--dp-devices", "cuda:0,,cuda:0"});
      },
      {"invalid device ''"}));
  EXPECT_TRUE(throws_error(
      [] {
        parse({"--dp", "3", "--dp-devices", "cpu:0,cpu:0"});
      },
      {"--dp 3 but --dp-devices 'cpu:0,cpu:0' names 2 devices"}));
}

TEST(RankDevice, CpuAndProcessesAloneTakeTheFlagAsGiven) {
  for (GpuBackend b : {GpuBackend::nccl, GpuBackend::mpi}) {
    EXPECT_EQ(train::rank_device({"cpu", 3, 4, 1, b}), Device::cpu());
    EXPECT_EQ(train::rank_device({"cuda", 0, 1, 1, b}), Device::cuda(0));
    EXPECT_EQ(train::rank_device({"cuda:3", 0, 1, 1, b}), Device::cuda(3));
  }
  EXPECT_TRUE(throws_error(
      [] {
        train::rank_device({"tpu", 0, 1, 0, GpuBackend::nccl});
      },
      {"tpu"}));
}

TEST(RankDevice, NcclTakesAGpuPerRankAndRefusesSharingNamingTheMpiBackend) {
  EXPECT_EQ(train::rank_device({"cuda", 2, 4, 4, GpuBackend::nccl}), Device::cuda(2));
  // Two ranks on a one-GPU machine: rank 1 has no cuda:1.
  EXPECT_TRUE(throws_error(
      [] {
        train::rank_device({"cuda", 1, 2, 1, GpuBackend::nccl});
      },
      {"2 processes on this machine but 1 GPU(s)", "no cuda:1", "Duplicate GPU detected",
       "--backend mpi"}));
  // One cuda:N for every rank.
  EXPECT_TRUE(throws_error(
      [] {
        train::rank_device({"cuda:0", 0, 2, 2, GpuBackend::nccl});
      },
      {"puts all 2 processes on this machine on cuda:0", "--backend mpi", "--device cuda"}));
}

TEST(RankDevice, TheMpiBackendSharesGpusWhenThereAreFewerThanRanks) {
  EXPECT_EQ(train::rank_device({"cuda", 0, 2, 1, GpuBackend::mpi}), Device::cuda(0));
  EXPECT_EQ(train::rank_device({"cuda", 1, 2, 1, GpuBackend::mpi}), Device::cuda(0));
  EXPECT_EQ(train::rank_device({"cuda", 3, 4, 2, GpuBackend::mpi}), Device::cuda(1));
  EXPECT_EQ(train::rank_device({"cuda", 1, 2, 2, GpuBackend::mpi}), Device::cuda(1));
  EXPECT_EQ(train::rank_device({"cuda:0", 1, 2, 1, GpuBackend::mpi}), Device::cuda(0));
  EXPECT_EQ(train::parse_gpu_backend("auto"), GpuBackend::nccl);
  EXPECT_EQ(train::parse_gpu_backend("mpi"), GpuBackend::mpi);
}

TEST(DataParallelDevices, ReplicasShareGpusWhenThereAreFewer) {
  using V = std::vector<Device>;
  EXPECT_EQ(train::data_parallel_devices("cpu", 3, "", 0),
            (V{Device::cpu(0), Device::cpu(1), Device::cpu(2)}));
  EXPECT_EQ(train::data_parallel_devices("cuda", 2, "", 1), (V{Device::cuda(0), Device::cuda(0)}));
  EXPECT_EQ(train::data_parallel_devices("cuda", 3, "", 2),
            (V{Device::cuda(0), Device::cuda(1), Device::cuda(0)}));
  EXPECT_EQ(train::data_parallel_devices("cuda", 2, "", 4), (V{Device::cuda(0), Device::cuda(1)}));
  EXPECT_EQ(train::data_parallel_devices("cpu", 0, "", 1), V{});
  // A list names the devices, whatever --device says; its first is the training device.
  EXPECT_EQ(train::data_parallel_devices("cpu", 0, "cuda:0,cuda:0", 1),
            (V{Device::cuda(0), Device::cuda(0)}));
  EXPECT_EQ(train::data_parallel_devices("cpu", 2, "cpu:0,cpu:1", 0),
            (V{Device::cpu(0), Device::cpu(1)}));
  EXPECT_TRUE(train::shares_a_device({Device::cuda(0), Device::cuda(1), Device::cuda(0)}));
  EXPECT_FALSE(train::shares_a_device({Device::cpu(0), Device::cpu(1)}));
}

TEST(GradientGroup, StagesGpuTensorsThroughTheHostOnlyForTheMpiBackend) {
  auto world = parallel::ThreadGroup::create(2)[0];
  std::shared_ptr<parallel::ProcessGroup> group = world;
  EXPECT_EQ(train::gradient_group(group, Device::cuda(0), GpuBackend::nccl), group);
  EXPECT_EQ(train::gradient_group(group, Device::cpu(), GpuBackend::mpi), group);
  const auto staged = train::gradient_group(group, Device::cuda(0), GpuBackend::mpi);
  ASSERT_NE(staged, group);
  EXPECT_EQ(staged->backend(), "threads+host");
  EXPECT_EQ(staged->size(), 2);
  // A world of one has nothing to reduce.
  auto alone = parallel::ThreadGroup::create(1)[0];
  EXPECT_EQ(train::gradient_group(alone, Device::cuda(0), GpuBackend::mpi), alone);
}

}  // namespace
}  // namespace rg::apps
