// DDP ranks that share one GPU (train_cifar --backend mpi): every rank on cuda:0, gradients and
// SyncBatchNorm through the MPI group, GPU tensors staged through host memory
// (parallel/host_staged_group.h). NCCL would refuse these ranks ("Duplicate GPU detected").
// Skips on every rank unless every rank sees a GPU; scripts/gpu_quick_check.sh (step dp_shared)
// runs it with 2 ranks on a lent GPU. Without a GPU the same path runs on logical cpu devices
// (tests/parallel/host_staged_group_test.cpp, and MpiDataParallel.DdpStagedThroughHostMemory).
#include <gtest/gtest.h>

#include "core/device.h"
#include "parallel/host_staged_group.h"
#include "parallel/world.h"
#include "tests/parallel/parallel_test_util.h"

namespace rg::parallel {
namespace {
using rg::testing::all_close;
using namespace rg::parallel::testing;

bool every_rank_sees_a_gpu() {
  static const bool all = [] {
    Tensor has = full({1}, cuda_device_count() > 0 ? 1 : 0, {.dtype = DType::i64});
    world_ptr()->allreduce(has, ReduceOp::min)->wait();
    return has.to_vector<int64_t>()[0] == 1;
  }();
  return all;
}

TEST(SharedGpu, DdpWithSyncBatchNormOverTheMpiBackendMatchesOneProcess) {
  if (!every_rank_sees_a_gpu()) GTEST_SKIP() << "needs a GPU on every rank";
  const Device gpu = Device::cuda(0);
  auto group = std::make_shared<HostStagedGroup>(world_ptr());
  const int64_t batch = 12;
  const Tolerance tol = tolerance_for(DType::f32);
  auto net = seeded<SmallConvNet>(100 + static_cast<uint64_t>(rank()), DType::f32, Norm::batch);
  net->to(gpu);
  DistributedDataParallel ddp(convert_sync_batchnorm(net, group), group,
                              {.bucket_cap_bytes = 512, .first_bucket_bytes = 64});
  auto reference = seeded<SmallConvNet>(7, DType::f32, Norm::batch);
  reference->to(gpu);
  reference->load_state_dict(ddp.state_dict());
  const SGDOptions options{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3};
  SGD opt(ddp.parameters(), options), ref_opt(reference->parameters(), options);
  for (int step = 0; step < 3; ++step) {
    const Tensor x = det_normal({batch, 3, 6, 6}, 1000 + step, DType::f32, 0.5, 2.0).to(gpu);
    const Tensor y = det_labels(batch, 5, 2000 + step).to(gpu);
    ref_opt.zero_grad();
    cross_entropy(reference->forward(x), y).backward();
    opt.zero_grad();
    cross_entropy(ddp.forward(rank_rows(x, *group)), rank_rows(y, *group)).backward();
    EXPECT_TRUE(ddp.last_iteration().synchronized);
    ref_opt.step();
    opt.step();
  }
  const auto ref_state = reference->state_dict();
  for (const auto& [name, t] : ddp.state_dict()) {
    ASSERT_TRUE(t.device() == gpu) << name;
    EXPECT_TRUE(
        all_close(t.to(Device::cpu()), ref_state.at(name).to(Device::cpu()), tol.atol, tol.rtol))
        << "rank " << rank() << " after 3 steps: " << name;
  }
}

}  // namespace
}  // namespace rg::parallel
