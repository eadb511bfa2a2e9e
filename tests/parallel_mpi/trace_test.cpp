// The timeline across real processes (CTest runs this under mpirun with 1-4 ranks): DDP with
// SyncBatchNorm traced for two steps, gathered into one file by rank 0, which checks that it is
// valid trace-event JSON (complete events nest per thread, each track in time order), holds
// one process per rank with its main and communication threads, each ring step with its bytes,
// the buckets, SyncBatchNorm's collectives, forward and backward per module — and that each
// rank's first bucket was on the wire before its backward's last node had run: the overlap DDP
// exists for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "core/trace.h"
#include "parallel/trace_file.h"
#include "parallel/world.h"
#include "tests/parallel/parallel_test_util.h"
#include "tests/support/trace_check.h"
#include "train/step_trace.h"

namespace rg::parallel {
namespace {
using namespace rg::parallel::testing;
using rg::testing::TraceEvent;

// conv(3→16) on 32x32 images, BatchNorm, ReLU, global average pool, linear(16→5): the last
// layer's bucket is tiny and ready early; the convolution's backward, long after it.
class TraceNet : public nn::Module {
 public:
  TraceNet() {
    conv1_ =
        std::make_shared<nn::Conv2d>(3, 16, nn::Size2{3, 3}, nn::Conv2dOptions{.padding = {1, 1}});
    bn1_ = std::make_shared<nn::BatchNorm2d>(16);
    fc_ = std::make_shared<nn::Linear>(16, 5);
    register_module("conv1", &conv1_);
    register_module("bn1", &bn1_);
    register_module("fc", &fc_);
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = relu(bn1_->forward(conv1_->forward(x)));
    return fc_->forward(adaptive_avg_pool2d(y, {1, 1}).flatten(1));
  }
  std::string type_name() const override { return "TraceNet"; }
  std::shared_ptr<nn::Conv2d> conv1_;
  std::shared_ptr<nn::BatchNorm2d> bn1_;
  std::shared_ptr<nn::Linear> fc_;
};

TEST(MpiTrace, OneFileOfEveryRankWithOverlapRingStepsAndModules) {
  auto group = world_ptr();
  const int n = group->size();
  trace::name_this_thread("main");
  std::shared_ptr<nn::Module> net = convert_sync_batchnorm(seeded<TraceNet>(3, DType::f32), group);
  DistributedDataParallel ddp(train::traced_model(net), group,
                              {.bucket_cap_bytes = 512, .first_bucket_bytes = 64});
  SGD opt(ddp.parameters(), {.lr = 0.01});
  const std::string path = ::testing::TempDir() + "/rg_mpi_trace_" + std::to_string(n) + ".json";
  check_trace_path(path);
  start_trace(*group);
  for (int step = 0; step < 2; ++step) {
    const Tensor x = det_normal({16 * n, 3, 32, 32}, 10 + step);
    const Tensor y = det_labels(16 * n, 5, 20 + step);
    opt.zero_grad();
    Tensor loss;
    {
      trace::Span forward("forward", "forward and loss");
      loss = cross_entropy(ddp.forward(rank_rows(x, *group)), rank_rows(y, *group));
    }
    trace::Span backward("backward", "backward");
    loss.backward();
  }
  write_trace(path, *group);
  group->barrier()->wait();
  if (group->rank() != 0) return;

  const rg::testing::TraceCheck c = rg::testing::check_trace_file(path);
  ASSERT_TRUE(c.errors.empty()) << c.summary();
  EXPECT_EQ(c.process_names.size(), static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(c.process_names.at(r), "rank " + std::to_string(r));
    std::set<std::string> threads;
    for (const auto& [key, name] : c.thread_names)
      if (key.first == r) threads.insert(name);
    EXPECT_TRUE(threads.count("main"));
    if (n > 1) {
      EXPECT_TRUE(threads.count("communication (MPI)"));
    }
    auto of_rank = [&](const std::string& part, char ph = 'X') {
      std::vector<const TraceEvent*> out;
      for (const TraceEvent* e : c.with_name_containing(part))
        if (e->pid == r && e->ph == ph) out.push_back(e);
      return out;
    };
    EXPECT_FALSE(of_rank("forward conv1").empty());
    EXPECT_FALSE(of_rank("forward bn1").empty());
    EXPECT_FALSE(of_rank("forward fc").empty());
    const auto backward_nodes = of_rank("backward ");  // "backward conv1", ... per module
    ASSERT_FALSE(backward_nodes.empty());
    EXPECT_FALSE(of_rank("SyncBatchNorm forward: allgather").empty());
    EXPECT_FALSE(of_rank("SyncBatchNorm backward: allreduce").empty());
    const auto buckets = of_rank("bucket 0", 'b');
    ASSERT_EQ(buckets.size(), 2u);  // one per step
    EXPECT_EQ(of_rank("bucket 0", 'e').size(), 2u);
    if (n == 1) continue;  // a world of one sends nothing: no ring
    const auto steps = of_rank("reduce-scatter step 1/");
    ASSERT_FALSE(steps.empty());
    EXPECT_NE(steps[0]->args.find("sent_bytes"), std::string::npos) << steps[0]->args;
    EXPECT_EQ(of_rank("allgather step " + std::to_string(2 * (n - 1)) + "/").size(),
              of_rank("reduce-scatter step 1/").size());
    // The overlap, in the second step: its first bucket's ring started before the last
    // backward node of that step ended.
    double last_node_end = 0;
    for (const TraceEvent* e : backward_nodes)
      if (e->ts > buckets[1]->ts - 1e6) last_node_end = std::max(last_node_end, e->end());
    const TraceEvent* first_ring_step = nullptr;
    for (const TraceEvent* e : steps)
      if (e->ts >= buckets[1]->ts && (!first_ring_step || e->ts < first_ring_step->ts))
        first_ring_step = e;
    ASSERT_TRUE(first_ring_step != nullptr);
    EXPECT_LT(first_ring_step->ts, last_node_end)
        << "bucket 0 ready at " << buckets[1]->ts << " us, its first ring step at "
        << first_ring_step->ts << " us, backward's last node ended at " << last_node_end;
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rg::parallel
