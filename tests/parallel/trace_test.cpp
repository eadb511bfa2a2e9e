// The timeline of the parallel pieces, ranks as threads: DataParallel shows one track per
// replica with its forward and backward and the main thread's scatter, replicate, gather and
// reduce-add; DDP over a ThreadGroup shows its buckets and SyncBatchNorm's collectives — each
// trace valid trace-event JSON (tests/support/trace_check.h).
#include <gtest/gtest.h>

#include "core/trace.h"
#include "parallel/data_parallel.h"
#include "tests/parallel/parallel_test_util.h"
#include "tests/support/trace_check.h"

namespace rg::parallel {
namespace {
using namespace rg::parallel::testing;
using rg::testing::check_trace_json;
using rg::testing::TraceCheck;

TraceCheck recorded_json() {
  trace::stop();
  return check_trace_json(trace::json_file({trace::to_json_objects(trace::take(), 0, "rank 0")}));
}

TEST(ParallelTrace, DataParallelHasOneTrackPerReplica) {
  const std::vector<Device> devices = {Device::cpu(0), Device::cpu(1), Device::cpu(2)};
  auto master = seeded<SmallConvNet>(1, DType::f32, Norm::batch);
  DataParallel model(master, [] { return std::make_shared<SmallConvNet>(Norm::batch); }, devices,
                     {.batch_norm = BatchNormSync::across_devices});
  trace::name_this_thread("main");
  trace::start();
  cross_entropy(model.forward(det_normal({9, 3, 6, 6}, 5)), det_labels(9, 5, 6)).backward();
  const TraceCheck c = recorded_json();
  ASSERT_TRUE(c.errors.empty()) << c.summary();
  std::set<int> replica_tracks;
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("replica " + std::to_string(r));
    const rg::testing::TraceEvent* forward = c.find("replica " + std::to_string(r) + " forward");
    const rg::testing::TraceEvent* backward = c.find("replica " + std::to_string(r) + " backward");
    ASSERT_TRUE(forward && backward) << c.summary();
    EXPECT_EQ(forward->tid, backward->tid);  // its own thread, forward and backward
    EXPECT_EQ(c.thread_names.at({0, forward->tid}),
              "replica " + std::to_string(r) + " (" + devices[r].str() + ")");
    replica_tracks.insert(forward->tid);
    // SyncBatchNorm's exchanges run on the replicas' threads.
    bool sync_bn = false;
    for (const auto* e : c.with_name_containing("SyncBatchNorm forward"))
      sync_bn |= e->tid == forward->tid;
    EXPECT_TRUE(sync_bn);
  }
  EXPECT_EQ(replica_tracks.size(), 3u);
  for (const char* phase :
       {"scatter", "broadcast", "replicate the buffers", "forward of the replicas", "gather",
        "backward of the replicas", "gather's backward", "broadcast's backward: reduce-add"}) {
    const rg::testing::TraceEvent* e = c.find(phase);
    ASSERT_TRUE(e) << phase << "\n" << c.summary();
    EXPECT_EQ(c.thread_names.at({0, e->tid}), "main") << phase;
  }
}

TEST(ParallelTrace, DdpBucketsAndSyncBatchNormOnThreads) {
  trace::start();
  on_threads(2, [](std::shared_ptr<ProcessGroup> group) {
    trace::name_this_thread("rank " + std::to_string(group->rank()));
    auto net = convert_sync_batchnorm(seeded<SmallConvNet>(1, DType::f32, Norm::batch), group);
    DistributedDataParallel ddp(net, group, {.bucket_cap_bytes = 512, .first_bucket_bytes = 64});
    cross_entropy(ddp.forward(rank_rows(det_normal({8, 3, 6, 6}, 5), *group)),
                  rank_rows(det_labels(8, 5, 6), *group))
        .backward();
  });
  const TraceCheck c = recorded_json();
  ASSERT_TRUE(c.errors.empty()) << c.summary();
  // Both ranks' threads: each bucket begun and ended twice (a ThreadGroup completes it in the
  // call, so the launching thread ends it).
  for (int b = 0; b < 3; ++b) {
    int begins = 0, ends = 0;
    for (const auto* e : c.with_name_containing("bucket " + std::to_string(b))) {
      begins += e->ph == 'b';
      ends += e->ph == 'e';
    }
    EXPECT_EQ(begins, 2) << "bucket " << b;
    EXPECT_EQ(ends, 2) << "bucket " << b;
  }
  EXPECT_EQ(c.with_name_containing("SyncBatchNorm forward: allgather").size(), 4u);  // 2 BN x 2
  EXPECT_EQ(c.with_name_containing("SyncBatchNorm backward: allreduce").size(), 4u);
  EXPECT_EQ(c.with_name_containing("wait for the buckets").size(), 2u);
}

}  // namespace
}  // namespace rg::parallel
