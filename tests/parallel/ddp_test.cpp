#include "parallel/ddp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/safetensors.h"
#include "core/trace.h"
#include "tests/parallel/parallel_test_util.h"

namespace rg::parallel {
namespace {
using rg::testing::all_close;
using rg::testing::throws_error;
using namespace rg::parallel::testing;

TEST(DDP, MatchesOneProcessWithoutBatchNorm) {
  for (int n : {2, 3, 4})
    on_threads(n, [](auto g) { ddp_matches_one_process(g, Norm::none, DType::f64); });
  on_threads(2, [](auto g) { ddp_matches_one_process(g, Norm::none, DType::f32); });
}

TEST(DDP, WithSyncBatchNormMatchesBatchNormOverTheFullBatch) {
  for (int n : {2, 3, 4})
    on_threads(n, [](auto g) { ddp_matches_one_process(g, Norm::batch, DType::f64); });
}

TEST(DDP, NoSyncAccumulatesLocallyThenAveragesTheSum) {
  for (int n : {2, 3})
    on_threads(n, [](auto g) { ddp_no_sync_matches_one_process(g, DType::f64); });
}

// Position of the first event starting with `prefix`, or events.size().
std::size_t find_event(const std::vector<std::string>& events, const std::string& prefix) {
  return static_cast<std::size_t>(
      std::find_if(events.begin(), events.end(),
                   [&](const std::string& e) { return e.rfind(prefix, 0) == 0; }) -
      events.begin());
}

TEST(DDP, BucketsFollowReverseRegistrationOrderAndTheirCaps) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> g) {
    auto net = seeded<SmallConvNet>(1, DType::f32, Norm::none);
    // fc (1100 bytes) closes the 64-byte first bucket; conv2 (888) the 512-byte ones.
    DistributedDataParallel ddp(net, g, {.bucket_cap_bytes = 512, .first_bucket_bytes = 64});
    const std::vector<BucketInfo> b = ddp.buckets();
    ASSERT_EQ(b.size(), 3u);
    EXPECT_EQ(b[0].params, (std::vector<std::string>{"fc.bias", "fc.weight"}));
    EXPECT_EQ(b[1].params, (std::vector<std::string>{"conv2.bias", "conv2.weight"}));
    EXPECT_EQ(b[2].params, (std::vector<std::string>{"conv1.bias", "conv1.weight"}));
    EXPECT_EQ(b[0].numel, 5 + 5 * 54);
    // The defaults (1 MB first, 25 MB after) put this small model in one bucket.
    DistributedDataParallel whole(net, g);
    EXPECT_EQ(whole.buckets().size(), 1u);
    EXPECT_NE(whole.str().find("DistributedDataParallel(world 2, 1 bucket(s)"), std::string::npos);
  });
}

TEST(DDP, BucketAllreducesLaunchWhileBackwardIsRunning) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> g) {
    std::vector<std::string> events;  // this rank's, in its own thread
    auto recording =
        std::make_shared<RecordingGroup>(g, [&](const std::string& e) { events.push_back(e); });
    auto net = seeded<SmallConvNet>(1, DType::f32, Norm::none);
    DistributedDataParallel ddp(net, recording,
                                {.bucket_cap_bytes = 512, .first_bucket_bytes = 64});
    for (const auto& [name, p] : net->named_parameters())
      Tensor(p).register_post_accumulate_hook(
          [&events, name = name](const Tensor&) { events.push_back("grad " + name); });
    const Tensor x = det_normal({4, 3, 6, 6}, 1), y = det_labels(4, 5, 2);
    for (int iteration = 0; iteration < 2; ++iteration) {
      events.clear();
      cross_entropy(ddp.forward(rank_rows(x, *g)), rank_rows(y, *g)).backward();
      events.push_back("backward returned");
      // The last layer's bucket is reduced while conv2 and conv1 still await their gradients;
      // conv2's while conv1 does.
      const std::size_t fc = find_event(events, "allreduce 275"),
                        conv2 = find_event(events, "allreduce 222"),
                        conv1 = find_event(events, "allreduce 112"),
                        end = find_event(events, "backward returned");
      EXPECT_LT(fc, find_event(events, "grad conv2.weight"));
      EXPECT_LT(fc, find_event(events, "grad conv2.bias"));
      EXPECT_LT(conv2, find_event(events, "grad conv1.weight"));
      EXPECT_LT(conv2, find_event(events, "grad conv1.bias"));
      EXPECT_LT(conv1, end);
      EXPECT_GT(fc,
                std::min(find_event(events, "grad fc.weight"), find_event(events, "grad fc.bias")));
      const auto stats = ddp.last_iteration();
      EXPECT_TRUE(stats.synchronized);
      EXPECT_EQ(stats.buckets, 3);
      EXPECT_EQ(stats.buckets_launched_in_hooks, 3);
      net->zero_grad();
    }
  });
}

// body → head, and a spare head that forward uses only when asked to.
class TwoHeads : public nn::Module {
 public:
  TwoHeads() {
    body_ = std::make_shared<nn::Linear>(4, 3);
    head_ = std::make_shared<nn::Linear>(3, 2);
    spare_ = std::make_shared<nn::Linear>(3, 2);
    register_module("body", &body_);
    register_module("head", &head_);
    register_module("spare", &spare_);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = relu(body_->forward(x));
    return use_spare ? head_->forward(h) + spare_->forward(h) : head_->forward(h);
  }
  std::string type_name() const override { return "TwoHeads"; }
  bool use_spare = false;
  std::shared_ptr<nn::Linear> body_, head_, spare_;
};

TEST(DDP, ParametersWithoutGradientAreNamed) {
  EXPECT_TRUE(throws_error(
      [] {
        on_threads(2, [](auto g) {
          DistributedDataParallel ddp(seeded<TwoHeads>(1, DType::f32), g);
          sum(ddp.forward(det_normal({3, 4}, 1))).backward();
        });
      },
      {"2 parameter(s) received no gradient", "spare.weight", "spare.bias",
       "UnusedParameters::allow"}));
}

TEST(DDP, AllowedUnusedParametersStillJoinTheAllreduce) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> g) {
    auto net = seeded<TwoHeads>(1, DType::f64);
    DistributedDataParallel ddp(net, g, {.unused_parameters = UnusedParameters::allow});
    auto reference = seeded<TwoHeads>(2, DType::f64);
    reference->load_state_dict(ddp.state_dict());
    const Tensor x = det_normal({4, 4}, 3, DType::f64);

    // Unused on every rank: the gradient stays undefined, the others are averaged as usual.
    sum(ddp.forward(rank_rows(x, *g))).backward();
    sum(reference->forward(x)).backward();
    EXPECT_FALSE(net->spare_->weight_.grad().defined());
    EXPECT_EQ(ddp.last_iteration().buckets_launched_in_hooks, 1);  // not held up by spare
    EXPECT_TRUE(all_close(net->body_->weight_.grad(), reference->body_->weight_.grad() * 0.5, 1e-12,
                          1e-10));  // average of the two halves' sums = half the sum

    // Used on rank 0 only: rank 1 contributes zeros, and both get the average.
    net->zero_grad();
    reference->zero_grad();
    net->use_spare = g->rank() == 0;
    reference->use_spare = true;
    sum(ddp.forward(rank_rows(x, *g))).backward();
    sum(reference->forward(x.narrow(0, 0, 2))).backward();  // rank 0's rows
    ASSERT_TRUE(net->spare_->weight_.grad().defined()) << "rank " << g->rank();
    EXPECT_TRUE(all_close(net->spare_->weight_.grad(), reference->spare_->weight_.grad() * 0.5,
                          1e-12, 1e-10));
  });
}

TEST(DDP, Fp16CompressionIsCloseToUncompressed) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> g) {
    std::vector<std::string> events;
    auto recording =
        std::make_shared<RecordingGroup>(g, [&](const std::string& e) { events.push_back(e); });
    auto plain_net = seeded<SmallConvNet>(3, DType::f32, Norm::none);
    auto fp16_net = seeded<SmallConvNet>(4, DType::f32, Norm::none);
    DistributedDataParallel plain(plain_net, g);
    DistributedDataParallel fp16(fp16_net, recording);
    fp16.register_comm_hook(fp16_compress_hook);
    fp16.load_state_dict(plain.state_dict());
    const Tensor x = det_normal({8, 3, 6, 6}, 5), y = det_labels(8, 5, 6);
    cross_entropy(plain.forward(rank_rows(x, *g)), rank_rows(y, *g)).backward();
    events.clear();
    cross_entropy(fp16.forward(rank_rows(x, *g)), rank_rows(y, *g)).backward();
    EXPECT_EQ(events, (std::vector<std::string>{"allreduce 609 x f16"}));
    const auto a = plain.named_parameters(), b = fp16.named_parameters();
    for (std::size_t i = 0; i < a.size(); ++i) {
      const Tensor ga = a[i].second.grad(), gb = b[i].second.grad();
      EXPECT_EQ(gb.dtype(), DType::f32);  // back in the parameters' dtype
      // f16 keeps 11 significant bits: each value within ~2⁻¹¹ relative of the f32 result,
      // plus the rounding of the small ones, relative to the largest.
      std::vector<float> v = ga.to_vector<float>();
      double largest = 0;
      for (float f : v) largest = std::max(largest, static_cast<double>(std::fabs(f)));
      EXPECT_TRUE(all_close(gb, ga, 1e-3 * largest, 2e-3)) << a[i].first;
      EXPECT_FALSE(all_close(gb, ga, 0, 0)) << a[i].first << ": compression changed nothing?";
    }
  });
}

TEST(DDP, StateDictHasNoWrapperPrefix) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> g) {
    auto net = seeded<SmallConvNet>(7, DType::f32, Norm::batch);
    DistributedDataParallel ddp(net, g);
    const auto state = ddp.state_dict();
    EXPECT_TRUE(state.count("conv1.weight"));
    EXPECT_TRUE(state.count("bn1.running_mean"));
    for (const auto& [name, _] : state) EXPECT_EQ(name.find("module"), std::string::npos) << name;
    EXPECT_EQ(ddp.parameters().size(), net->parameters().size());
    // Saved through the wrapper, loaded into a plain model (strict).
    if (g->rank() == 0) {
      const std::string path = rg::testing::temp_path("ddp.safetensors");
      save_safetensors(path, state);
      auto plain = seeded<SmallConvNet>(8, DType::f32, Norm::batch);
      plain->load_state_dict(load_safetensors(path).tensors);
      plain->eval();
      ddp.eval();
      const Tensor x = det_normal({2, 3, 6, 6}, 9);
      EXPECT_TRUE(all_close(plain->forward(x), ddp.forward(x), 0, 0));
    }
  });
}

TEST(DDP, StartsFromRankZerosWeightsAndBroadcastsBuffersAtForward) {
  for (BroadcastBuffers mode : {BroadcastBuffers::forward, BroadcastBuffers::off}) {
    on_threads(2, [mode](std::shared_ptr<ProcessGroup> g) {
      auto net =
          seeded<SmallConvNet>(10 + static_cast<uint64_t>(g->rank()), DType::f32, Norm::batch);
      DistributedDataParallel ddp(net, g, {.broadcast_buffers = mode});
      // Construction made every replica rank 0's.
      Tensor w = net->conv1_->weight_.detach().contiguous().clone();
      Tensor all = empty({2 * w.numel()});
      g->allgather(all, w.flatten())->wait();
      EXPECT_TRUE(
          all_close(all.narrow(0, 0, w.numel()), all.narrow(0, w.numel(), w.numel()), 0, 0));
      // Rank 1's running statistics drift (as they would with per-rank batches)...
      if (g->rank() == 1) {
        NoGradGuard no_grad;
        fill_(net->bn1_->running_mean_, 5.0);
      }
      // ...a training forward on the same data brings them back to rank 0's, unless off.
      ddp.forward(det_normal({4, 3, 6, 6}, 11));
      Tensor rm = net->bn1_->running_mean_.contiguous().clone();
      Tensor both = empty({2 * rm.numel()});
      g->allgather(both, rm)->wait();
      const bool equal =
          all_close(both.narrow(0, 0, rm.numel()), both.narrow(0, rm.numel(), rm.numel()), 0, 0);
      EXPECT_EQ(equal, mode == BroadcastBuffers::forward);
    });
  }
}

TEST(DDP, SyncBatchNormBuffersAreNotBroadcast) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> g) {
    std::vector<std::string> events;
    auto recording =
        std::make_shared<RecordingGroup>(g, [&](const std::string& e) { events.push_back(e); });
    auto plain = seeded<SmallConvNet>(1, DType::f32, Norm::batch);
    auto synced = convert_sync_batchnorm(seeded<SmallConvNet>(1, DType::f32, Norm::batch), g);
    DistributedDataParallel a(plain, recording), b(synced, recording);
    const Tensor x = det_normal({2, 3, 6, 6}, 1);
    events.clear();
    a.forward(x);
    EXPECT_EQ(find_event(events, "broadcast"), 0u);  // running stats (f32), then the counters (i64)
    EXPECT_EQ(events.size(), 2u);
    events.clear();
    b.forward(x);
    EXPECT_EQ(find_event(events, "broadcast"), events.size());
    // No synchronisation outside training with grad mode on: no collectives at all.
    events.clear();
    {
      NoGradGuard no_grad;
      a.forward(x);
    }
    a.eval();
    a.forward(x);
    EXPECT_TRUE(events.empty());
  });
}

TEST(DDP, ANoGradForwardBetweenForwardAndBackwardChangesNothing) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> g) {
    auto net = seeded<SmallConvNet>(1, DType::f64, Norm::none);
    DistributedDataParallel ddp(net, g);
    auto reference = seeded<SmallConvNet>(2, DType::f64, Norm::none);
    reference->load_state_dict(ddp.state_dict());
    const Tensor x = det_normal({4, 3, 6, 6}, 1, DType::f64), y = det_labels(4, 5, 2);
    Tensor loss = cross_entropy(ddp.forward(rank_rows(x, *g)), rank_rows(y, *g));
    {
      NoGradGuard no_grad;  // e.g. logging the accuracy of another batch, on one rank only
      if (g->rank() == 0) ddp.forward(det_normal({3, 3, 6, 6}, 3, DType::f64));
    }
    loss.backward();
    EXPECT_TRUE(ddp.last_iteration().synchronized);
    cross_entropy(reference->forward(x), y).backward();
    EXPECT_TRUE(all_close(net->fc_->weight_.grad(), reference->fc_->weight_.grad(), 1e-12, 1e-10));
  });
}

TEST(DDP, RefusesDifferentModelsOnDifferentRanks) {
  EXPECT_TRUE(throws_error(
      [] {
        on_threads(2, [](auto g) {
          auto net = seeded<SmallConvNet>(1, DType::f32, g->rank() == 0 ? Norm::none : Norm::batch);
          DistributedDataParallel ddp(net, g);
        });
      },
      {"DistributedDataParallel", "rank 1 holds a different model than rank 0"}));
}

TEST(DDP, ASecondBackwardThroughOneForwardIsAnError) {
  auto groups = ThreadGroup::create(1);
  DistributedDataParallel ddp(seeded<SmallConvNet>(1, DType::f32, Norm::none), groups[0]);
  Tensor loss = sum(ddp.forward(det_normal({2, 3, 6, 6}, 1)));
  loss.backward(Tensor(), /*retain_graph=*/true);
  EXPECT_TRUE(throws_error([&] { loss.backward(); },
                           {"fc.", "after this iteration's gradients were averaged"}));
}

// gradient_as_bucket_view: after the first backward every gradient is its slice of a bucket's
// buffer; zero_grad zeroes it there and the next backward accumulates into it, so no gradient
// is ever allocated or copied again.
TEST(DDP, GradientsAreViewsIntoTheBucketsAcrossSteps) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> g) {
    auto net = seeded<SmallConvNet>(1, DType::f64, Norm::none);
    DistributedDataParallel ddp(net, g, {.bucket_cap_bytes = 512, .first_bucket_bytes = 64});
    SGD opt(ddp.parameters(), {.lr = 0.1});
    const Tensor x = det_normal({4, 3, 6, 6}, 1, DType::f64), y = det_labels(4, 5, 2);
    std::vector<void*> first;
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      if (step > 0)  // zeroed in place, not dropped
        for (const Tensor& p : ddp.parameters()) {
          EXPECT_TRUE(all_close(p.grad(), zeros_like(p), 0, 0));
        }
      cross_entropy(ddp.forward(rank_rows(x, *g)), rank_rows(y, *g)).backward();
      const std::vector<BucketInfo> buckets = ddp.buckets();
      for (std::size_t b = 0; b < buckets.size(); ++b)
        for (std::size_t j = 0; j < buckets[b].param_index.size(); ++j) {
          const Tensor p = ddp.trained_parameters()[buckets[b].param_index[j]];
          ASSERT_TRUE(p.grad_is_view()) << buckets[b].params[j];
          const auto* base = static_cast<const char*>(ddp.bucket_buffer(b).data_ptr());
          EXPECT_EQ(static_cast<const char*>(p.grad().data_ptr()), base + buckets[b].offsets[j] * 8)
              << buckets[b].params[j];
        }
      std::vector<void*> now;
      for (const Tensor& p : ddp.parameters()) now.push_back(p.grad().data_ptr());
      if (step == 0) first = now;
      EXPECT_EQ(now, first);  // the same memory every step
      opt.step();
    }
  });
}

// A hook is any callable: here one that sums instead of averaging, on buffers padded to a
// multiple of 5 — the gradients come out N times the averaged ones.
TEST(DDP, ACommHookOfOurOwnReplacesTheAverage) {
  on_threads(3, [](std::shared_ptr<ProcessGroup> g) {
    auto plain_net = seeded<SmallConvNet>(1, DType::f64, Norm::none);
    auto summed_net = seeded<SmallConvNet>(1, DType::f64, Norm::none);
    DistributedDataParallel plain(plain_net, g,
                                  {.bucket_cap_bytes = 512, .first_bucket_bytes = 64});
    DistributedDataParallel summed(summed_net, g,
                                   {.bucket_cap_bytes = 512, .first_bucket_bytes = 64});
    int calls = 0;
    EXPECT_FALSE(summed.has_comm_hook());
    summed.register_comm_hook(
        [&calls](ProcessGroup& group, GradBucket& bucket) {
          ++calls;
          return group.allreduce(bucket.buffer, ReduceOp::sum);
        },
        5);
    EXPECT_TRUE(summed.has_comm_hook());
    for (std::size_t b = 0; b < summed.buckets().size(); ++b)
      EXPECT_EQ(summed.bucket_buffer(b).numel() % 5, 0);
    const Tensor x = det_normal({6, 3, 6, 6}, 3, DType::f64), y = det_labels(6, 5, 4);
    cross_entropy(plain.forward(rank_rows(x, *g)), rank_rows(y, *g)).backward();
    cross_entropy(summed.forward(rank_rows(x, *g)), rank_rows(y, *g)).backward();
    EXPECT_EQ(calls, 3);  // once per bucket
    const auto a = plain.named_parameters(), b = summed.named_parameters();
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(all_close(b[i].second.grad(), a[i].second.grad() * 3.0, 1e-12, 1e-12))
          << a[i].first;
    EXPECT_TRUE(throws_error([&] { summed.register_comm_hook(nullptr); }, {"the hook is empty"}));
  });
}

TEST(DDP, Bf16CompressionIsCloseToUncompressed) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> g) {
    auto plain_net = seeded<SmallConvNet>(3, DType::f32, Norm::none);
    auto bf16_net = seeded<SmallConvNet>(3, DType::f32, Norm::none);
    DistributedDataParallel plain(plain_net, g), bf16(bf16_net, g);
    bf16.register_comm_hook(bf16_compress_hook);
    const Tensor x = det_normal({8, 3, 6, 6}, 5), y = det_labels(8, 5, 6);
    cross_entropy(plain.forward(rank_rows(x, *g)), rank_rows(y, *g)).backward();
    cross_entropy(bf16.forward(rank_rows(x, *g)), rank_rows(y, *g)).backward();
    const auto a = plain.named_parameters(), b = bf16.named_parameters();
    for (std::size_t i = 0; i < a.size(); ++i) {
      double largest = 0;
      for (float f : a[i].second.grad().to_vector<float>())
        largest = std::max(largest, static_cast<double>(std::fabs(f)));
      // bf16 keeps 8 significant bits: within ~2^-8 relative, plus the small values' rounding.
      EXPECT_TRUE(all_close(b[i].second.grad(), a[i].second.grad(), 8e-3 * largest, 8e-3))
          << a[i].first;
    }
  });
}

// The explain sink tells the bucket story of a real iteration (docs/learn/3-ddp.md shows it).
TEST(DDP, ExplainTellsTheBucketStory) {
  auto groups = ThreadGroup::create(1);
  DistributedDataParallel ddp(seeded<SmallConvNet>(1, DType::f32, Norm::none), groups[0],
                              {.bucket_cap_bytes = 512, .first_bucket_bytes = 64});
  trace::explain({"ddp"});
  sum(ddp.forward(det_normal({2, 3, 6, 6}, 1))).backward();
  trace::stop_explaining();
  std::string story;
  for (const std::string& line : trace::take_explained()) story += line + "\n";
  for (const char* part :
       {"forward: synchronised iteration — buckets 3",
        "gradient ready fc.weight — bucket 0, to go 1",
        "gradient ready fc.bias — bucket 0, to go 0",
        "bucket 0 begins — elements 275, dtype f32, bytes 1.1 KiB, parameters fc.bias fc.weight",
        "bucket 2 begins", "bucket 2 ends", "wait for the buckets ("})
    EXPECT_NE(story.find(part), std::string::npos) << part << "\n" << story;
  EXPECT_TRUE(trace::take_explained().empty());  // taken
}

}  // namespace
}  // namespace rg::parallel
