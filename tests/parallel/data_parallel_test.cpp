// DataParallel on logical cpu devices: N devices × shares of batch B must train exactly as one
// device with batch B (gradients of the first step, parameters and buffers after K steps), with
// the documented exception of per-device BatchNorm, whose difference is checked to be the
// expected one; and SyncBatchNorm across the devices' threads removes it.
#include "parallel/data_parallel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/allocator.h"
#include "core/autocast.h"
#include "core/thread_pool.h"
#include "nn/models/zoo.h"
#include "tests/parallel/parallel_test_util.h"

namespace rg::parallel {
namespace {
using rg::testing::all_close;
using rg::testing::throws_error;
using namespace rg::parallel::testing;

std::vector<Device> cpus(int n) {
  std::vector<Device> devices;
  for (int r = 0; r < n; ++r) devices.push_back(Device::cpu(r));
  return devices;
}

// A replica factory: the architecture only (DataParallel copies the master's values).
DataParallel::ReplicaFactory small_net(Norm norm, DType dtype) {
  return [norm, dtype] { return seeded<SmallConvNet>(99, dtype, norm); };
}

enum class Sync { per_device, across_devices };

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  double worst = 0;
  for (std::size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - vb[i]));
  return worst;
}

// K steps of SGD (momentum, weight decay) on DP over n devices against one device, batch
// `batch`: first-step gradients and the input's gradient, then parameters and buffers.
void dp_matches_one_device(const std::vector<Device>& devices, int64_t batch, Norm norm, Sync sync,
                           int steps = 3) {
  const int n = static_cast<int>(devices.size());
  std::string names;
  for (const Device& d : devices) names += d.str() + " ";
  SCOPED_TRACE("devices " + names + ", batch " + std::to_string(batch));
  const DType dtype = DType::f64;
  const Tolerance tol = tolerance_for(dtype);
  auto master = seeded<SmallConvNet>(5, dtype, norm);
  auto reference = seeded<SmallConvNet>(6, dtype, norm);
  reference->load_state_dict(master->state_dict());
  DataParallel dp(master, small_net(norm, dtype), devices,
                  {.batch_norm = sync == Sync::across_devices ? BatchNormSync::across_devices
                                                              : BatchNormSync::per_device});
  const SGDOptions options{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3};
  SGD opt(dp.parameters(), options), ref_opt(reference->parameters(), options);
  for (int step = 0; step < steps; ++step) {
    const Tensor data = det_normal({batch, 3, 6, 6}, 300 + step, dtype, 0.5, 2.0);
    const Tensor y = det_labels(batch, 5, 400 + step);
    Tensor x_ref = data.clone().set_requires_grad(true),
           x_dp = data.clone().set_requires_grad(true);
    ref_opt.zero_grad();
    cross_entropy(reference->forward(x_ref), y).backward();
    opt.zero_grad();
    const Tensor out = dp.forward(x_dp);
    EXPECT_EQ(out.device(), Device::cpu(0));
    EXPECT_EQ(dp.last_devices_used(), std::min<int64_t>(n, batch));
    cross_entropy(out, y).backward();
    if (step == 0) {
      EXPECT_TRUE(all_close(x_dp.grad(), x_ref.grad(), tol.atol, tol.rtol)) << "input gradient";
      const auto ref = reference->named_parameters();
      const auto mine = dp.named_parameters();
      ASSERT_EQ(ref.size(), mine.size());
      for (std::size_t i = 0; i < ref.size(); ++i) {
        EXPECT_EQ(mine[i].second.grad().device(), Device::cpu(0)) << mine[i].first;
        EXPECT_TRUE(all_close(mine[i].second.grad(), ref[i].second.grad(), tol.atol, tol.rtol))
            << "gradient of " << mine[i].first;
      }
    }
    opt.step();
    ref_opt.step();
  }
  const auto ref = reference->state_dict();
  for (const auto& [name, value] : dp.state_dict())
    EXPECT_TRUE(all_close(value, ref.at(name), tol.atol, tol.rtol))
        << name << " after " << steps << " steps";
}

TEST(LogicalCpuDevices, ParseNameAndCompare) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu(0));
  EXPECT_EQ(Device::parse("cpu:0"), Device::cpu());
  EXPECT_EQ(Device::parse("cpu:3"), Device::cpu(3));
  EXPECT_TRUE(Device::cpu(3).is_cpu());
  EXPECT_NE(Device::cpu(1), Device::cpu(0));
  EXPECT_EQ(Device::cpu(0).str(), "cpu");
  EXPECT_EQ(Device::cpu(2).str(), "cpu:2");
  EXPECT_TRUE(throws_error([] { Device::parse("cpu:64"); }, {"cpu:64", "cpu:0..cpu:63"}));
  EXPECT_TRUE(throws_error([] { Device::parse("cpu:x"); }, {"invalid device 'cpu:x'", "cpu:N"}));
  EXPECT_TRUE(throws_error([] { Device::parse("cpu:-1"); }, {"invalid device 'cpu:-1'"}));
}

TEST(LogicalCpuDevices, TensorsOnTwoDevicesAreAMismatch) {
  const Tensor a = ones({3}), b = ones({3}, {.device = Device::cpu(1)});
  EXPECT_EQ(b.device(), Device::cpu(1));
  EXPECT_TRUE(throws_error([&] { add(a, b); }, {"device mismatch", "cpu:1"}));
  const Tensor moved = b.to(Device::cpu(0));
  EXPECT_EQ(moved.device(), Device::cpu(0));
  EXPECT_EQ(add(a, moved).to_vector<float>(), std::vector<float>(3, 2.0f));
  // A kernel on cpu:2 writes its output on cpu:2.
  const Tensor c = ones({2, 2}, {.device = Device::cpu(2)});
  EXPECT_EQ(matmul(c, c).device(), Device::cpu(2));
}

TEST(LogicalCpuDevices, MemoryIsCountedPerDevice) {
  const MemoryStats before1 = memory_stats(Device::cpu(1)), before5 = memory_stats(Device::cpu(5));
  {
    const Tensor t = empty({1 << 20}, {.device = Device::cpu(5)});  // 4 MiB
    EXPECT_EQ(memory_stats(Device::cpu(5)).current_bytes - before5.current_bytes, 4 << 20);
    EXPECT_EQ(memory_stats(Device::cpu(1)).current_bytes, before1.current_bytes);
  }
  EXPECT_EQ(memory_stats(Device::cpu(5)).current_bytes, before5.current_bytes);
}

TEST(ThreadShare, GivesTheThreadItsOwnPool) {
  const int process_threads = num_threads();
  ThreadShare one(1);
  std::thread worker([&] {
    ScopedThreadShare share(one);
    EXPECT_EQ(num_threads(), 1);
    std::set<std::thread::id> ids;
    std::mutex mutex;
    parallel_for(1 << 20, 1, [&](int64_t, int64_t) {
      std::lock_guard lock(mutex);
      ids.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(ids, std::set<std::thread::id>{std::this_thread::get_id()});
  });
  worker.join();
  EXPECT_EQ(num_threads(), process_threads);  // other threads keep the process-wide pool
  ThreadShare three(3);
  ScopedThreadShare share(three);
  EXPECT_EQ(num_threads(), 3);
  std::atomic<int64_t> covered{0};
  parallel_for(1000, 1, [&](int64_t b, int64_t e) { covered += e - b; });
  EXPECT_EQ(covered.load(), 1000);
}

// SyncBatchNorm over a ThreadGroup whose ranks are threads of logical devices (each rank's
// tensors on its own cpu:r, as in DataParallel's device threads): BatchNorm over the whole
// batch, uneven and empty shares included.
TEST(SyncBatchNormAcrossDeviceThreads, EqualsBatchNormOverTheWholeBatch) {
  for (const std::vector<int64_t>& sizes :
       {std::vector<int64_t>{4, 4}, {2, 3, 2}, {3, 0, 1}, {5, 0, 0, 2}}) {
    on_threads(static_cast<int>(sizes.size()), [&](auto group) {
      const Device here = Device::cpu(group->rank());
      CurrentCpuDevice current(here);
      const int64_t before = memory_stats(here).allocations;
      sync_batch_norm_matches_batch_norm(group, sizes, DType::f64);
      EXPECT_GT(memory_stats(here).allocations, before) << "rank " << group->rank();
      EXPECT_EQ(ones({1}).device(), here);
    });
  }
}

TEST(DataParallel, SplitsUnevenBatchesAsEquallyAsPossible) {
  EXPECT_EQ(split_sizes(10, 3), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(split_sizes(8, 2), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(split_sizes(2, 2), (std::vector<int64_t>{1, 1}));
}

TEST(DataParallel, MatchesOneDeviceWithoutBatchNorm) {
  for (int n : {1, 2, 3}) {
    dp_matches_one_device(cpus(n), 12, Norm::none, Sync::per_device);
    dp_matches_one_device(cpus(n), 7, Norm::none, Sync::per_device);  // uneven shares
  }
}

// Replicas that share a device (two on cpu:0; two on cpu:1 beside one on cpu:0) — what
// `--dp-devices cuda:0,cuda:0` does on a GPU — train exactly as one device, each on its own
// thread.
TEST(DataParallel, ReplicasSharingADeviceMatchOneDevice) {
  const std::vector<Device> both_on_0 = {Device::cpu(0), Device::cpu(0)};
  const std::vector<Device> two_on_1 = {Device::cpu(0), Device::cpu(1), Device::cpu(1)};
  for (const auto& devices : {both_on_0, two_on_1}) {
    dp_matches_one_device(devices, 12, Norm::none, Sync::per_device);
    dp_matches_one_device(devices, 7, Norm::batch, Sync::across_devices);
  }
}

TEST(DataParallel, ReportsReplicasThatShareADeviceOnce) {
  const DType dtype = DType::f32;
  DataParallel dp(seeded<SmallConvNet>(5, dtype, Norm::none), small_net(Norm::none, dtype),
                  {Device::cpu(0), Device::cpu(0)});
  cross_entropy(dp.forward(det_normal({4, 3, 6, 6}, 1, dtype)), det_labels(4, 5, 2)).backward();
  EXPECT_GT(dp.times().device_forward[1], 0);
  const std::string report = dp.report();
  for (const char* part : {"replica 0 on cpu: computing", "MiB peak", "replica 1 on cpu: computing",
                           "memory: shared with replica 0"})
    EXPECT_NE(report.find(part), std::string::npos) << part << " in\n" << report;
}

TEST(DataParallel, FewerSamplesThanDevicesUsesFewerDevices) {
  dp_matches_one_device(cpus(3), 2, Norm::none, Sync::per_device);
  dp_matches_one_device(cpus(3), 2, Norm::batch, Sync::across_devices);
}

TEST(DataParallel, WithSyncBatchNormMatchesBatchNormOverTheWholeBatch) {
  for (int n : {1, 2, 3}) {
    dp_matches_one_device(cpus(n), 12, Norm::batch, Sync::across_devices);
    dp_matches_one_device(cpus(n), 7, Norm::batch, Sync::across_devices);
  }
}

// A real model: ResNet-20 (residual additions, BatchNorm everywhere) at a quarter width, f64.
TEST(DataParallel, ResNetWithSyncBatchNormMatchesOneDevice) {
  const auto make = [] {
    manual_seed(3);
    auto m = nn::make_model("resnet20@0.25", 10);
    m->to(DType::f64);
    return m;
  };
  auto reference = make();
  DataParallel dp(make(), make, cpus(3), {.batch_norm = BatchNormSync::across_devices});
  const SGDOptions options{.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4};
  SGD opt(dp.parameters(), options), ref_opt(reference->parameters(), options);
  for (int step = 0; step < 3; ++step) {
    const Tensor x = det_normal({8, 3, 32, 32}, 500 + step, DType::f64);
    const Tensor y = det_labels(8, 10, 600 + step);
    opt.zero_grad();
    ref_opt.zero_grad();
    cross_entropy(dp.forward(x), y).backward();
    cross_entropy(reference->forward(x), y).backward();
    opt.step();
    ref_opt.step();
  }
  const auto ref = reference->state_dict();
  for (const auto& [name, value] : dp.state_dict())
    EXPECT_TRUE(all_close(value, ref.at(name), 1e-10, 1e-8)) << name;
}

// Per-device BatchNorm (PyTorch's DataParallel): each replica normalises with its own share's
// statistics, and the master keeps replica 0's running statistics.
void per_device_batch_norm_uses_each_share(const std::vector<Device>& devices);

TEST(DataParallel, PerDeviceBatchNormUsesEachShareAndKeepsDeviceZerosStatistics) {
  // Also with both replicas on the master's device: replica 1 must update a copy of the
  // running statistics, not the master's own (which replica 0 updates at the same time).
  for (const std::vector<Device>& devices : {cpus(2), {Device::cpu(0), Device::cpu(0)}})
    per_device_batch_norm_uses_each_share(devices);
}

void per_device_batch_norm_uses_each_share(const std::vector<Device>& devices) {
  SCOPED_TRACE(devices[1].str());
  const DType dtype = DType::f64;
  auto master = seeded<SmallConvNet>(5, dtype, Norm::batch);
  auto whole = seeded<SmallConvNet>(6, dtype, Norm::batch);   // one device, whole batch
  auto shares = seeded<SmallConvNet>(6, dtype, Norm::batch);  // one device, share by share
  whole->load_state_dict(master->state_dict());
  shares->load_state_dict(master->state_dict());
  DataParallel dp(master, small_net(Norm::batch, dtype), devices);
  const Tensor x = det_normal({7, 3, 6, 6}, 11, dtype, 0.5, 2.0);
  const Tensor y = det_labels(7, 5, 12);
  const Tensor out = dp.forward(x);
  cross_entropy(out, y).backward();

  // Replica r saw rows [0, 4) and [4, 7): the same outputs as one device run share by share.
  const Tensor first = shares->forward(x.narrow(0, 0, 4));
  std::map<std::string, Tensor> after_first;  // running statistics of share 0 only
  for (const auto& [name, value] : shares->state_dict()) after_first[name] = value.clone();
  const Tensor second = shares->forward(x.narrow(0, 4, 3));
  EXPECT_TRUE(all_close(out.narrow(0, 0, 4), first, 1e-12, 1e-10));
  EXPECT_TRUE(all_close(out.narrow(0, 4, 3), second, 1e-12, 1e-10));
  for (const char* name : {"bn1.running_mean", "bn1.running_var", "bn2.running_mean"})
    EXPECT_TRUE(all_close(dp.state_dict().at(name), after_first.at(name), 1e-12, 1e-10)) << name;

  // ... which is not what one device computes over the whole batch: the difference is the
  // size of the gap between a share's statistics and the batch's, far above rounding.
  cross_entropy(whole->forward(x), y).backward();
  const Tensor dp_grad = dp.named_parameters()[0].second.grad();
  const Tensor one_grad = whole->named_parameters()[0].second.grad();
  EXPECT_GT(max_abs_diff(dp_grad, one_grad), 1e-4);
  EXPECT_GT(max_abs_diff(dp.state_dict().at("bn1.running_mean"),
                         whole->state_dict().at("bn1.running_mean")),
            1e-4);
}

// A layer that fails on one device, to see how the error reads.
class FailsOn : public nn::Module {
 public:
  explicit FailsOn(Device device) : device_(device) {}
  Tensor forward(const Tensor& x) override {
    RG_CHECK(x.device() != device_, "FailsOn: refusing ", x.describe());
    return x;
  }
  std::string type_name() const override { return "FailsOn"; }
  Device device_;
};

TEST(DataParallel, AnErrorInAReplicaNamesTheReplicaAndItsDevice) {
  auto factory = [] { return std::make_shared<FailsOn>(Device::cpu(1)); };
  DataParallel dp(factory(), factory, cpus(3));
  EXPECT_TRUE(throws_error(
      [&] {
        dp.forward(ones({6, 2}));
      },
      {"DataParallel: replica 1 on cpu:1 failed in forward",
       "FailsOn: refusing [2, 2] f32 cpu:1"}));
  // The next step works when the failing device is not used.
  EXPECT_EQ(dp.forward(ones({1, 2})).size(0), 1);
}

// Records, in each replica's thread, the grad mode and autocast state it runs with.
class StateProbe : public nn::Module {
 public:
  Tensor forward(const Tensor& x) override {
    std::lock_guard lock(mutex);
    seen.emplace_back(GradMode::is_enabled(), autocast_dtype());
    return x;
  }
  std::string type_name() const override { return "StateProbe"; }
  static inline std::mutex mutex;
  static inline std::vector<std::pair<bool, std::optional<DType>>> seen;
};

TEST(DataParallel, CarriesGradModeAndAutocastIntoTheDeviceThreads) {
  auto factory = [] { return std::make_shared<StateProbe>(); };
  DataParallel dp(factory(), factory, cpus(2));
  const Tensor x = ones({4, 3}).set_requires_grad(true);
  using Seen = std::vector<std::pair<bool, std::optional<DType>>>;
  StateProbe::seen.clear();
  EXPECT_TRUE(dp.forward(x).requires_grad());
  EXPECT_EQ(StateProbe::seen, (Seen{{true, std::nullopt}, {true, std::nullopt}}));
  StateProbe::seen.clear();
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(dp.forward(x).requires_grad());
  }
  EXPECT_EQ(StateProbe::seen, (Seen{{false, std::nullopt}, {false, std::nullopt}}));
  StateProbe::seen.clear();
  {
    AutocastGuard autocast(DType::bf16);
    dp.forward(x);
  }
  EXPECT_EQ(StateProbe::seen, (Seen{{true, DType::bf16}, {true, DType::bf16}}));
}

TEST(DataParallel, ReportsPhasesAndMemoryPerDevice) {
  const DType dtype = DType::f32;
  DataParallel dp(seeded<SmallConvNet>(5, dtype, Norm::none), small_net(Norm::none, dtype),
                  cpus(2));
  reset_peak_memory(Device::cpu(1));
  const Tensor x = det_normal({8, 3, 6, 6}, 1, dtype);
  cross_entropy(dp.forward(x), det_labels(8, 5, 2)).backward();
  const DataParallelTimes& t = dp.times();
  EXPECT_EQ(t.forwards, 1);
  EXPECT_EQ(t.backwards, 1);
  EXPECT_GT(t.forward, 0);
  EXPECT_GT(t.backward, 0);
  EXPECT_GT(t.reduce, 0);
  EXPECT_GT(t.device_forward[1], 0);
  EXPECT_GT(memory_stats(Device::cpu(1)).peak_bytes, 0);  // replica 1's activations
  const std::string report = dp.report();
  for (const char* part : {"scatter", "replicate", "forward", "gather", "backward", "reduce",
                           "replica 1 on cpu:1: computing", "MiB peak"})
    EXPECT_NE(report.find(part), std::string::npos) << part << " in\n" << report;
  dp.reset_times();
  EXPECT_EQ(dp.times().forwards, 0);
}

TEST(DataParallel, RefusesAMisplacedModelAndAFactoryThatBuildsAnotherOne) {
  const DType dtype = DType::f32;
  EXPECT_TRUE(throws_error(
      [&] {
        auto m = seeded<SmallConvNet>(5, dtype, Norm::none);
        m->to(Device::cpu(1));
        DataParallel dp(m, small_net(Norm::none, dtype), cpus(2));
      },
      {"parameter 'conv1.weight' is on cpu:1", "first device, cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        DataParallel dp(seeded<SmallConvNet>(5, dtype, Norm::none), small_net(Norm::batch, dtype),
                        cpus(2));
      },
      {"the replica factory builds"}));
  DataParallel dp(seeded<SmallConvNet>(5, dtype, Norm::none), small_net(Norm::none, dtype),
                  cpus(2));
  EXPECT_TRUE(throws_error(
      [&] {
        dp.forward(ones({2, 3, 6, 6}, {.device = Device::cpu(1)}));
      },
      {"the input must be on the first device, cpu"}));
}

// One forward, two backwards through it: the second is refused like any freed graph.
TEST(DataParallel, BackwardTwiceThroughOneForwardIsAnError) {
  const DType dtype = DType::f32;
  DataParallel dp(seeded<SmallConvNet>(5, dtype, Norm::none), small_net(Norm::none, dtype),
                  cpus(2));
  const Tensor loss = cross_entropy(dp.forward(det_normal({4, 3, 6, 6}, 1)), det_labels(4, 5, 2));
  loss.backward();
  EXPECT_TRUE(throws_error([&] { loss.backward(); }, {"a second time"}));
}

}  // namespace
}  // namespace rg::parallel
