// DataParallel on real GPUs: replicas sharing one GPU (cuda:0, cuda:0 — each on its own thread
// and stream), and one replica per GPU where there are several. Each trains as one device
// does. They skip, saying so, without a GPU (scripts/gpu_quick_check.sh runs them on a lent
// one: step dp_shared; scripts/gpu_multi_check.sh on several); on logical cpu devices the same
// checks run in data_parallel_test.cpp.
#include <gtest/gtest.h>

#include "core/device.h"
#include "parallel/data_parallel.h"
#include "tests/parallel/parallel_test_util.h"

namespace rg::parallel {
namespace {
using rg::testing::all_close;
using namespace rg::parallel::testing;

// K steps of SGD on DataParallel over `devices` against one device (devices[0]), f32: the
// parameters and buffers after the steps, and the input's and parameters' gradients of the
// first step.
void dp_on_gpus_matches_one_device(const std::vector<Device>& devices, Norm norm,
                                   BatchNormSync sync) {
  const DType dtype = DType::f32;
  const Tolerance tol = tolerance_for(dtype);
  auto master = seeded<SmallConvNet>(5, dtype, norm);
  auto reference = seeded<SmallConvNet>(6, dtype, norm);
  reference->load_state_dict(master->state_dict());
  master->to(devices[0]);
  reference->to(devices[0]);
  DataParallel dp(master, [&] { return seeded<SmallConvNet>(99, dtype, norm); }, devices,
                  {.batch_norm = sync});
  const SGDOptions options{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3};
  SGD opt(dp.parameters(), options), ref_opt(reference->parameters(), options);
  for (int step = 0; step < 3; ++step) {
    const Tensor x = det_normal({12, 3, 6, 6}, 300 + step, dtype, 0.5, 2.0).to(devices[0]);
    const Tensor y = det_labels(12, 5, 400 + step).to(devices[0]);
    ref_opt.zero_grad();
    cross_entropy(reference->forward(x), y).backward();
    opt.zero_grad();
    const Tensor out = dp.forward(x);
    ASSERT_TRUE(out.device() == devices[0]);
    cross_entropy(out, y).backward();
    opt.step();
    ref_opt.step();
  }
  const auto ref = reference->state_dict();
  for (const auto& [name, value] : dp.state_dict())
    EXPECT_TRUE(
        all_close(value.to(Device::cpu()), ref.at(name).to(Device::cpu()), tol.atol, tol.rtol))
        << name;
  const std::string report = dp.report();
  EXPECT_NE(report.find("replica 1 on " + devices[1].str()), std::string::npos) << report;
}

TEST(DataParallelOnGpu, ReplicasSharingOneGpuMatchOneDevice) {
  if (cuda_device_count() < 1) GTEST_SKIP() << "needs a GPU; this machine has none";
  const std::vector<Device> shared = {Device::cuda(0), Device::cuda(0)};
  dp_on_gpus_matches_one_device(shared, Norm::none, BatchNormSync::per_device);
  dp_on_gpus_matches_one_device(shared, Norm::batch, BatchNormSync::across_devices);
  dp_on_gpus_matches_one_device({Device::cuda(0), Device::cuda(0), Device::cuda(0)}, Norm::batch,
                                BatchNormSync::across_devices);
}

TEST(DataParallelOnGpu, OneReplicaPerGpuMatchesOneDevice) {
  const int gpus = cuda_device_count();
  if (gpus < 2) GTEST_SKIP() << "needs 2 GPUs or more; this machine has " << gpus;
  std::vector<Device> devices;
  for (int d = 0; d < gpus; ++d) devices.push_back(Device::cuda(d));
  dp_on_gpus_matches_one_device(devices, Norm::none, BatchNormSync::per_device);
  dp_on_gpus_matches_one_device(devices, Norm::batch, BatchNormSync::across_devices);
}

// Copies between two GPUs (scatter, gather, broadcast, reduce-add all make them): values and
// devices, both ways, with the reduce-add's order.
TEST(DataParallelOnGpu, CopiesBetweenGpus) {
  const int gpus = cuda_device_count();
  if (gpus < 2) GTEST_SKIP() << "needs 2 GPUs or more; this machine has " << gpus;
  const Tensor a = det_normal({1 << 20}, 1).to(Device::cuda(0));
  const Tensor b = a.to(Device::cuda(1));
  ASSERT_TRUE(b.device() == Device::cuda(1));
  EXPECT_TRUE(all_close(b.to(Device::cpu()), a.to(Device::cpu()), 0, 0));
  const Tensor back = b.to(Device::cuda(0));
  EXPECT_TRUE(all_close(back.to(Device::cpu()), a.to(Device::cpu()), 0, 0));
  const Tensor sum = reduce_add({a, b}, Device::cuda(0));
  EXPECT_TRUE(all_close(sum.to(Device::cpu()), add(a, a).to(Device::cpu()), 0, 0));
}

}  // namespace
}  // namespace rg::parallel
