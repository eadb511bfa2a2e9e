// The NCCL backend on GPUs (parallel/nccl/): every collective on cuda tensors, our ring over
// ncclSend/ncclRecv and NCCL's own algorithm, against a reference computed on the host from
// every rank's input — and DDP with SyncBatchNorm on cuda against one process. Each rank runs
// on cuda:local_rank; the tests skip on every rank unless every rank has its GPU (a machine
// with one GPU runs them with one rank: the communicator, the launches and the streams are
// real, the sums trivial). CUDA builds only; without a GPU nccl_bootstrap_test covers the
// error path.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/device.h"
#include "parallel/reduce.h"
#include "parallel/world.h"
#include "tests/parallel/parallel_test_util.h"
#include "tests/parallel_mpi/collective_values.h"

namespace rg::parallel {
namespace {
using rg::testing::all_close;
using namespace rg::parallel::testing;

// A collective decision: true on every rank when every rank has its GPU.
bool every_rank_has_a_gpu() {
  static const bool all = [] {
    Tensor has = full({1}, cuda_device_count() > local_rank() ? 1 : 0, {.dtype = DType::i64});
    world_ptr()->allreduce(has, ReduceOp::min)->wait();
    return has.to_vector<int64_t>()[0] == 1;
  }();
  return all;
}

Device my_gpu() {
  return Device::cuda(local_rank());
}

// Made once in the same order on every rank (the MPI tests' groups are others).
const CollectiveGroups& groups() {
  static const CollectiveGroups g = make_collective_groups(std::chrono::seconds(30));
  return g;
}

std::string no_gpus() {
  return "needs a GPU per rank (cuda:local_rank); this machine has " +
         std::to_string(cuda_device_count());
}

TEST(NcclCollectives, AllreduceRingAndNcclMatchTheReference) {
  if (!every_rank_has_a_gpu()) GTEST_SKIP() << no_gpus();
  const CollectiveGroups& g = groups();
  const int ranks = size(), me = rank();
  for (DType dtype : kDtypes)
    for (ReduceOp op : kOps)
      for (int64_t n :
           {int64_t{0}, int64_t{1}, int64_t{ranks + 1}, int64_t{4099}, int64_t{300003}}) {
        SCOPED_TRACE(::testing::Message() << "allreduce " << reduce_op_name(op) << " of " << n
                                          << " x " << dtype << " over " << ranks << " ranks");
        const Tensor x = input(me, n, dtype).to(my_gpu());
        Tensor ring = x.clone(), native = x.clone(), small = x.clone();
        auto w1 = g.ring->allreduce(ring, op);
        auto w2 = g.native->allreduce(native, op);
        auto w3 = n < 10000 ? g.ring_small->allreduce(small, op) : nullptr;
        w1->wait(), w2->wait();
        if (w3) w3->wait();
        const Tensor expected = reference(ranks, n, 0, dtype, op);
        const double tol = tolerance(dtype, ranks);
        ASSERT_TRUE(ring.device() == my_gpu());
        ASSERT_TRUE(all_close(ring.to(Device::cpu()), expected, tol, 0)) << "ring";
        ASSERT_TRUE(all_close(native.to(Device::cpu()), expected, tol, 0)) << "nccl";
        if (w3) {
          ASSERT_TRUE(all_close(small.to(Device::cpu()), expected, tol, 0)) << "small messages";
        }
      }
}

TEST(NcclCollectives, ReduceScatterAllgatherBroadcast) {
  if (!every_rank_has_a_gpu()) GTEST_SKIP() << no_gpus();
  const CollectiveGroups& g = groups();
  const int ranks = size(), me = rank();
  for (DType dtype : kDtypes) {
    for (ReduceOp op : kOps)
      for (int64_t n : {0, 1, 50}) {
        SCOPED_TRACE(::testing::Message() << "reduce_scatter " << reduce_op_name(op) << " of " << n
                                          << " x " << dtype << " per rank");
        const Tensor in = input(me, n * ranks, dtype).to(my_gpu());
        for (auto& group : {g.ring, g.native}) {
          Tensor out = full({n}, 3, {.dtype = dtype, .device = my_gpu()});
          group->reduce_scatter(out, in, op)->wait();
          ASSERT_TRUE(all_close(out.to(Device::cpu()), reference(ranks, n, me * n, dtype, op),
                                tolerance(dtype, ranks), 0));
        }
        ASSERT_TRUE(all_close(in.to(Device::cpu()), input(me, n * ranks, dtype), 0, 0))
            << "the input changed";
      }
    for (int64_t n : {0, 1, 1000}) {
      SCOPED_TRACE(::testing::Message() << "allgather of " << n << " x " << dtype);
      const Tensor in = input(me, n, dtype).to(my_gpu());
      for (auto& group : {g.ring, g.ring_small, g.native}) {
        Tensor out = full({n * ranks}, 3, {.dtype = dtype, .device = my_gpu()});
        group->allgather(out, in)->wait();
        const Tensor host = out.to(Device::cpu());
        for (int r = 0; r < ranks; ++r)
          ASSERT_EQ(host.narrow(0, r * n, n).to_vector<double>(),
                    input(r, n, dtype).to_vector<double>())
              << "slice of rank " << r;
      }
    }
    for (int root = 0; root < ranks; ++root) {
      Tensor t = (me == root ? input(root, 33, dtype) : zeros({33}, {.dtype = dtype})).to(my_gpu());
      world_ptr()->broadcast(t, root)->wait();
      ASSERT_EQ(t.to(Device::cpu()).to_vector<double>(), input(root, 33, dtype).to_vector<double>())
          << "broadcast from " << root << " of " << dtype;
    }
  }
}

// A collective waits for the kernels queued before it on the caller's stream, and what is
// queued after it waits for the collective.
TEST(NcclCollectives, OrderedWithTheCallersStream) {
  if (!every_rank_has_a_gpu()) GTEST_SKIP() << no_gpus();
  const int ranks = size();
  Tensor t = full({1 << 22}, 1, {.device = my_gpu()});
  t = t * 3.0;  // queued on the current stream just before the collective
  world_ptr()->allreduce(t, ReduceOp::sum)->wait();
  const Tensor after = t + 1.0;
  const std::vector<float> v = after.to(Device::cpu()).to_vector<float>();
  EXPECT_EQ(v.front(), 3.0f * static_cast<float>(ranks) + 1.0f);
  EXPECT_EQ(v.back(), 3.0f * static_cast<float>(ranks) + 1.0f);
}

// DDP over NCCL with SyncBatchNorm on the GPU: N ranks × batch B/N against one process with
// batch B on the same GPU (every rank runs the reference too), f32.
TEST(NcclDataParallel, DdpWithSyncBatchNormOnCudaMatchesOneProcess) {
  if (!every_rank_has_a_gpu()) GTEST_SKIP() << no_gpus();
  auto group = world_ptr();
  const int64_t batch = 12;
  const Tolerance tol = tolerance_for(DType::f32);
  auto replica_net =
      seeded<SmallConvNet>(100 + static_cast<uint64_t>(rank()), DType::f32, Norm::batch);
  replica_net->to(my_gpu());
  std::shared_ptr<nn::Module> replica = convert_sync_batchnorm(replica_net, group);
  DistributedDataParallel ddp(replica, group, {.bucket_cap_bytes = 512, .first_bucket_bytes = 64});
  auto reference = seeded<SmallConvNet>(7, DType::f32, Norm::batch);
  reference->to(my_gpu());
  reference->load_state_dict(ddp.state_dict());
  const SGDOptions options{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3};
  SGD opt(ddp.parameters(), options), ref_opt(reference->parameters(), options);
  for (int step = 0; step < 3; ++step) {
    const Tensor x = det_normal({batch, 3, 6, 6}, 1000 + step, DType::f32, 0.5, 2.0).to(my_gpu());
    const Tensor y = det_labels(batch, 5, 2000 + step).to(my_gpu());
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
    ASSERT_TRUE(t.device() == my_gpu()) << name;
    EXPECT_TRUE(
        all_close(t.to(Device::cpu()), ref_state.at(name).to(Device::cpu()), tol.atol, tol.rtol))
        << "rank " << rank() << " after 3 steps: " << name;
  }
}

}  // namespace
}  // namespace rg::parallel
