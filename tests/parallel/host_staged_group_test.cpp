// HostStagedGroup (DDP ranks sharing a GPU over the MPI backend) on logical cpu devices: device
// tensors reach the inner group as host copies, and the results come back when the work is
// waited for — not before.
#include "parallel/host_staged_group.h"

#include <gtest/gtest.h>

#include "core/autograd.h"
#include "parallel/thread_group.h"
#include "tests/parallel/parallel_test_util.h"

namespace rg::parallel {
namespace {
using rg::testing::throws_error;
using namespace rg::parallel::testing;

// A world of one whose collectives finish only when waited for (as over MPI, where the
// communication thread finishes them later): an allreduce doubles its tensor then, so that the
// test sees when the result arrives. It records the devices of what it was given.
class LaterGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string backend() const override { return "later"; }
  std::vector<Device> seen;
  bool fail = false;

  class Later final : public Work {
   public:
    Later(std::function<void()> fn, bool fail) : fn_(std::move(fn)), fail_(fail) {}
    void wait() override {
      if (fail_) rg::fail("allreduce #1 on rank 0: timed out after 10 ms waiting for rank 1");
      if (fn_) std::exchange(fn_, nullptr)();
    }
    bool is_completed() override { return done_; }
    bool done_ = false;

   private:
    std::function<void()> fn_;
    bool fail_;
  };
  std::shared_ptr<Later> last;

  std::shared_ptr<Work> allreduce(const Tensor& t, ReduceOp) override {
    seen.push_back(t.device());
    return last = std::make_shared<Later>([t] { add_inplace(t, t.clone()); }, fail);
  }
  std::shared_ptr<Work> broadcast(const Tensor& t, int) override {
    seen.push_back(t.device());
    return last = std::make_shared<Later>([t] { fill_(t, 7.0); }, fail);
  }
  std::shared_ptr<Work> allgather(const Tensor& out, const Tensor& in) override {
    seen.push_back(out.device());
    seen.push_back(in.device());
    return last = std::make_shared<Later>([out, in] { copy_strided(out, in); }, fail);
  }
  std::shared_ptr<Work> reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp) override {
    seen.push_back(out.device());
    seen.push_back(in.device());
    return last = std::make_shared<Later>([out, in] { copy_strided(out, in); }, fail);
  }
  std::shared_ptr<Work> barrier() override { return std::make_shared<CompletedWork>(); }
};

const Device kDevice = Device::cpu(1);

TEST(HostStagedGroup, ADeviceTensorGoesThroughTheHostAndBackWhenWaitedFor) {
  auto inner = std::make_shared<LaterGroup>();
  HostStagedGroup group(inner);
  EXPECT_EQ(group.backend(), "later+host");
  const Tensor t = full({5}, 3.0, {.device = kDevice});
  const auto work = group.allreduce(t, ReduceOp::sum);
  EXPECT_EQ(inner->seen, std::vector<Device>{Device::cpu()});
  EXPECT_FALSE(work->is_completed());
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(5, 3.f));  // not before the work is done
  work->wait();
  EXPECT_EQ(t.device(), kDevice);
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(5, 6.f));
  work->wait();  // a second wait copies nothing again
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(5, 6.f));
}

TEST(HostStagedGroup, IsCompletedCopiesTheResultBackOnce) {
  auto inner = std::make_shared<LaterGroup>();
  HostStagedGroup group(inner);
  const Tensor t = full({3}, 1.0, {.device = kDevice});
  const auto work = group.allreduce(t, ReduceOp::sum);
  EXPECT_FALSE(work->is_completed());
  inner->last->done_ = true;
  EXPECT_TRUE(work->is_completed());
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(3, 2.f));
  EXPECT_TRUE(work->is_completed());
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(3, 2.f));
}

TEST(HostStagedGroup, HostTensorsGoStraightToTheInnerGroup) {
  auto inner = std::make_shared<LaterGroup>();
  HostStagedGroup group(inner);
  const Tensor t = full({2}, 1.0);
  group.allreduce(t, ReduceOp::sum)->wait();
  EXPECT_EQ(inner->seen, std::vector<Device>{Device::cpu()});
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(2, 2.f));  // in place, no copy
}

TEST(HostStagedGroup, EveryCollectiveStagesItsDeviceTensors) {
  auto inner = std::make_shared<LaterGroup>();
  HostStagedGroup group(inner);
  const Tensor b = zeros({4}, {.device = kDevice});
  group.broadcast(b, 0)->wait();
  EXPECT_EQ(b.to_vector<float>(), std::vector<float>(4, 7.f));
  const Tensor out = zeros({3}, {.device = kDevice});
  group.allgather(out, arange(0, 3, 1, {.device = kDevice}))->wait();
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{0, 1, 2}));
  const Tensor piece = zeros({3}, {.device = kDevice});
  group.reduce_scatter(piece, full({3}, 5.0), ReduceOp::sum)->wait();  // a host input
  EXPECT_EQ(piece.to_vector<float>(), std::vector<float>(3, 5.f));
  for (const Device& d : inner->seen) EXPECT_EQ(d, Device::cpu());
}

TEST(HostStagedGroup, AFailedCollectiveLeavesTheDeviceTensorAndNamesItsError) {
  auto inner = std::make_shared<LaterGroup>();
  inner->fail = true;
  HostStagedGroup group(inner);
  const Tensor t = full({2}, 4.0, {.device = kDevice});
  const auto work = group.allreduce(t, ReduceOp::sum);
  EXPECT_TRUE(throws_error([&] { work->wait(); }, {"allreduce #1", "timed out"}));
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(2, 4.f));
  EXPECT_TRUE(throws_error([&] { group.allreduce(Tensor(), ReduceOp::sum); }, {"allreduce"}));
}

// DDP with each rank's model on a device of its own (logical cpu:1 and cpu:2 standing in for
// two ranks on a GPU), gradients and SyncBatchNorm through host memory: one process's math.
TEST(HostStagedGroup, DdpWithSyncBatchNormThroughHostMemoryMatchesOneProcess) {
  for (Norm norm : {Norm::none, Norm::batch})
    on_threads(2, [&](std::shared_ptr<ProcessGroup> group) {
      // The models, data and DDP's buckets are made on the thread's current device.
      const Device device = Device::cpu(1 + group->rank());
      CurrentCpuDevice current(device);
      ASSERT_EQ(ones({1}).device(), device);
      ddp_matches_one_process(std::make_shared<HostStagedGroup>(group), norm, DType::f64);
    });
}

}  // namespace
}  // namespace rg::parallel
