#include "parallel/horovod.h"

#include <gtest/gtest.h>

#include "optim/adamw.h"
#include "tests/parallel/parallel_test_util.h"

namespace rg::parallel {
namespace {
using rg::testing::all_close;
using rg::testing::throws_error;
using namespace rg::parallel::testing;

TEST(Horovod, DistributedOptimizerMatchesOneProcess) {
  for (int n : {2, 3, 4})
    on_threads(n, [](auto g) { distributed_optimizer_matches_one_process(g, 1); });
}

TEST(Horovod, BackwardPassesPerStepAccumulateBeforeOneAllreduce) {
  for (int n : {2, 4})
    on_threads(n, [](auto g) { distributed_optimizer_matches_one_process(g, 2); });
  // The allreduces wait for the k-th pass: none after the first of two.
  on_threads(2, [](std::shared_ptr<ProcessGroup> g) {
    int allreduces = 0;
    auto counting = std::make_shared<RecordingGroup>(g, [&](const std::string&) { ++allreduces; });
    auto net = seeded<SmallConvNet>(1, DType::f32, Norm::none);
    SGD sgd(net->parameters(), {.lr = 0.1});
    DistributedOptimizer opt(sgd, {.backward_passes_per_step = 2}, counting);
    const Tensor x = det_normal({2, 3, 6, 6}, 1);
    sum(net->forward(x)).backward();
    EXPECT_EQ(allreduces, 0);
    sum(net->forward(x)).backward();
    EXPECT_EQ(allreduces, 6);  // one per parameter, launched from the hooks during backward
    opt.step();
    EXPECT_EQ(allreduces, 6);
  });
}

TEST(Horovod, MoreBackwardPassesThanDeclaredNameTheParameter) {
  auto groups = ThreadGroup::create(1);
  auto net = seeded<SmallConvNet>(1, DType::f32, Norm::none);
  SGD sgd(net->parameters(), {.lr = 0.1});
  DistributedOptimizer opt(sgd, {.backward_passes_per_step = 1}, groups[0]);
  const Tensor x = det_normal({2, 3, 6, 6}, 1);
  sum(net->forward(x)).backward();
  EXPECT_TRUE(throws_error([&] { sum(net->forward(x)).backward(); },
                           {"DistributedOptimizer", "parameter 4 [5, 54]", "2 backward passes",
                            "backward_passes_per_step = 1"}));
  EXPECT_TRUE(
      throws_error([&] { DistributedOptimizer(sgd, {.backward_passes_per_step = 0}, groups[0]); },
                   {"backward_passes_per_step", "got 0"}));
}

TEST(Horovod, UnusedParametersJoinWithZeros) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> g) {
    nn::Linear used(2, 2), unused(2, 2);
    std::vector<Tensor> params = used.parameters();
    for (const Tensor& p : unused.parameters()) params.push_back(p);
    SGD sgd(params, {.lr = 0.1});
    DistributedOptimizer opt(sgd, {}, g);
    sum(used.forward(det_normal({1, 2}, 1 + static_cast<uint64_t>(g->rank())))).backward();
    opt.synchronize();
    EXPECT_TRUE(all_close(unused.weight_.grad(), zeros({2, 2}), 0, 0));
  });
}

TEST(Horovod, BroadcastParametersFromRoot) {
  on_threads(3, [](std::shared_ptr<ProcessGroup> g) {
    auto net = seeded<SmallConvNet>(10 + static_cast<uint64_t>(g->rank()), DType::f32, Norm::batch);
    auto root = seeded<SmallConvNet>(11, DType::f32, Norm::batch);  // rank 1's weights
    {
      NoGradGuard no_grad;
      if (g->rank() == 1) fill_(net->bn1_->running_var_, 3.0);
      fill_(root->bn1_->running_var_, 3.0);
    }
    broadcast_parameters(*net, 1, *g);
    for (const auto& [name, t] : root->state_dict())
      EXPECT_TRUE(all_close(net->state_dict().at(name), t, 0, 0)) << name;  // buffers too
    // Named tensors, e.g. a subset.
    Tensor w = full({2}, g->rank());
    broadcast_parameters(std::map<std::string, Tensor>{{"w", w}}, 2, *g);
    EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{2, 2}));
  });
}

// Rank 0's value of a string (every rank passes one of the same length, or it differs).
std::string root_string(ProcessGroup& g, const std::string& text) {
  Tensor length = full({1}, static_cast<double>(text.size()), {DType::i64});
  g.broadcast(length, 0)->wait();
  Tensor bytes = zeros(
      {std::max<int64_t>(static_cast<int64_t>(length.item()), static_cast<int64_t>(text.size()))},
      {DType::u8});
  std::copy(text.begin(), text.end(), bytes.data<uint8_t>());
  Tensor root = bytes.narrow(0, 0, static_cast<int64_t>(length.item())).contiguous().clone();
  g.broadcast(root, 0)->wait();
  const uint8_t* p = root.data<uint8_t>();
  return std::string(p, p + root.numel());
}

// Rank 0 has trained (its optimizer has state); the others are fresh, with none.
template <class Opt, class Options>
void broadcast_state_body(std::shared_ptr<ProcessGroup> g, Options root_options, Options fresh) {
  auto net = seeded<SmallConvNet>(1, DType::f32, Norm::none);
  Opt opt(net->parameters(), g->rank() == 0 ? root_options : fresh);
  if (g->rank() == 0) {
    for (int i = 0; i < 2; ++i) {
      sum(net->forward(det_normal({2, 3, 6, 6}, 5))).backward();
      opt.step();
    }
  }
  broadcast_optimizer_state(opt, 0, *g);
  // Every rank now holds rank 0's state: the same tensors (a broadcast of rank 0's changes
  // nothing) and the same metadata (hyperparameters, step counts).
  const StateDict mine = opt.state_dict();
  EXPECT_EQ(opt.lr(0), root_options.lr);
  EXPECT_FALSE(mine.tensors.empty());
  for (const auto& [name, t] : mine.tensors) {
    Tensor root_copy = t.contiguous().clone();
    g->broadcast(root_copy, 0)->wait();
    EXPECT_TRUE(all_close(t, root_copy, 0, 0)) << name;
  }
  std::string meta;
  for (const auto& [k, v] : mine.metadata) meta += k + "=" + v + ";";
  EXPECT_EQ(meta, root_string(*g, meta));
}

TEST(Horovod, BroadcastOptimizerStateToRanksThatHaveNone) {
  on_threads(2, [](auto g) {
    broadcast_state_body<SGD>(g, SGDOptions{.lr = 0.2, .momentum = 0.9},
                              SGDOptions{.lr = 0.1, .momentum = 0.9});
  });
  on_threads(3, [](auto g) {
    broadcast_state_body<AdamW>(g, AdamWOptions{.lr = 3e-3}, AdamWOptions{.lr = 1e-3});
  });
}

TEST(Horovod, AllreduceMetricSumAndAverage) {
  on_threads(4, [](std::shared_ptr<ProcessGroup> g) {
    const double r = g->rank();
    EXPECT_EQ(allreduce_metric(r + 1, "loss", ReduceOp::sum, *g), 10.0);
    EXPECT_EQ(allreduce_metric(r + 1, "loss", ReduceOp::average, *g), 2.5);
    Tensor t = from_vector<float>({float(r), 1.f}, {2});
    EXPECT_EQ(allreduce_metric(t, "pair", ReduceOp::average, *g).to_vector<float>(),
              (std::vector<float>{1.5f, 1.f}));
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{float(r), 1.f}));  // not in place
  });
  auto groups = ThreadGroup::create(2, std::chrono::milliseconds(100));
  EXPECT_TRUE(throws_error([&] { allreduce_metric(1.0, "val_acc", ReduceOp::sum, *groups[0]); },
                           {"allreduce_metric('val_acc')", "timed out", "rank(s) 1"}));
}

TEST(Horovod, WorldDefaultsAndThreadWorlds) {
  set_world(nullptr);
  EXPECT_FALSE(has_world());
  EXPECT_TRUE(throws_error([] { rank(); }, {"no world", "init()"}));
  auto solo = ThreadGroup::create(1);
  set_world(solo[0]);
  EXPECT_EQ(size(), 1);
  EXPECT_EQ(allreduce_metric(4.0, "x"), 4.0);  // the world is the default group
  on_threads(3, [](std::shared_ptr<ProcessGroup> g) {
    ScopedThreadWorld w(g);  // each rank thread its own world, over the process-wide one
    EXPECT_EQ(rank(), g->rank());
    EXPECT_EQ(size(), 3);
    EXPECT_EQ(local_rank(), g->rank());
    EXPECT_EQ(allreduce_metric(1.0, "ones", ReduceOp::sum), 3.0);
    SyncBatchNorm sbn(2);  // default group: the world
    EXPECT_EQ(&sbn.group(), g.get());
  });
  EXPECT_EQ(size(), 1);  // back to the process-wide world
  set_world(nullptr);
}

}  // namespace
}  // namespace rg::parallel
