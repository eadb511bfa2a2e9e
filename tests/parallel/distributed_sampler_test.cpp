#include "parallel/distributed_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/parallel/parallel_test_util.h"

namespace rg::parallel {
namespace {
using rg::testing::throws_error;
using namespace rg::parallel::testing;

std::vector<std::vector<int64_t>> all_ranks(int64_t n, int replicas, DistributedSamplerOptions o,
                                            int64_t epoch = 0) {
  std::vector<std::vector<int64_t>> out;
  for (int r = 0; r < replicas; ++r) {
    DistributedSampler s(n, replicas, r, o);
    s.set_epoch(epoch);
    out.push_back(s.indices());
  }
  return out;
}

TEST(DistributedSampler, PyTorchSemantics) {
  // torch.utils.data.DistributedSampler(range(10), num_replicas=4, rank=r, shuffle=False):
  // padded with the first two indices; with drop_last the last two are left out.
  const auto pad = all_ranks(10, 4, {.shuffle = Shuffle::off});
  EXPECT_EQ(pad, (std::vector<std::vector<int64_t>>{{0, 4, 8}, {1, 5, 9}, {2, 6, 0}, {3, 7, 1}}));
  const auto drop = all_ranks(10, 4, {.shuffle = Shuffle::off, .last = LastSamples::drop});
  EXPECT_EQ(drop, (std::vector<std::vector<int64_t>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // Fewer samples than the padding: the order repeats as often as needed.
  const auto tiny = all_ranks(2, 5, {.shuffle = Shuffle::off});
  EXPECT_EQ(tiny, (std::vector<std::vector<int64_t>>{{0}, {1}, {0}, {1}, {0}}));
  // Shuffled: the epoch's permutation, dealt out round-robin.
  const std::vector<int64_t> p = data::random_permutation(10, 42, 3);
  const auto shuffled = all_ranks(10, 3, {.seed = 42}, 3);
  EXPECT_EQ(shuffled[1], (std::vector<int64_t>{p[1], p[4], p[7], p[0]}));
  EXPECT_EQ(shuffled[2], (std::vector<int64_t>{p[2], p[5], p[8], p[1]}));
}

TEST(DistributedSampler, CoversTheDataSetOncePerEpochOnEveryRank) {
  for (int replicas : {2, 3, 4})
    for (int64_t n : {1, 7, 12, 13}) {
      for (Shuffle shuffle : {Shuffle::off, Shuffle::on}) {
        const auto ranks = all_ranks(n, replicas, {.shuffle = shuffle, .seed = 5}, 1);
        std::multiset<int64_t> real, everything;
        for (int r = 0; r < replicas; ++r) {
          DistributedSampler s(n, replicas, r, {.shuffle = shuffle, .seed = 5});
          const auto& mine = ranks[static_cast<std::size_t>(r)];
          ASSERT_EQ(static_cast<int64_t>(mine.size()), s.size());
          EXPECT_EQ(s.size(), (n + replicas - 1) / replicas);  // equal on every rank
          for (int64_t k = 0; k < s.size(); ++k) {
            everything.insert(mine[static_cast<std::size_t>(k)]);
            if (!s.is_padding(k)) real.insert(mine[static_cast<std::size_t>(k)]);
            EXPECT_EQ(s.is_padding(k), k >= s.num_real_samples());  // padding is a suffix
          }
        }
        // Real positions: every index exactly once. Padding: at most replicas − 1 extras.
        std::multiset<int64_t> once;
        for (int64_t i = 0; i < n; ++i) once.insert(i);
        EXPECT_EQ(real, once) << "n " << n << " replicas " << replicas;
        EXPECT_EQ(static_cast<int64_t>(everything.size()) - n,
                  (replicas - n % replicas) % replicas);
        // drop: each index at most once, the same number on every rank.
        const auto dropped =
            all_ranks(n, replicas, {.shuffle = shuffle, .last = LastSamples::drop}, 1);
        std::set<int64_t> seen;
        for (const auto& mine : dropped) {
          EXPECT_EQ(static_cast<int64_t>(mine.size()), n / replicas);
          for (int64_t i : mine) EXPECT_TRUE(seen.insert(i).second) << i << " twice";
        }
      }
    }
}

TEST(DistributedSampler, SamePermutationOnEveryRankNewOneEachEpoch) {
  // The ranks' lists interleave back into one permutation of the data set, per epoch.
  auto global = [](int64_t epoch) {
    const auto ranks = all_ranks(12, 3, {.seed = 9}, epoch);
    std::vector<int64_t> order;
    for (std::size_t k = 0; k < 4; ++k)
      for (const auto& mine : ranks) order.push_back(mine[k]);
    return order;
  };
  EXPECT_EQ(global(0), data::random_permutation(12, 9, 0));
  EXPECT_EQ(global(1), data::random_permutation(12, 9, 1));
  EXPECT_NE(global(0), global(1));
  EXPECT_NE(all_ranks(12, 3, {.seed = 9}), all_ranks(12, 3, {.seed = 10}));
  // The same on ranks that are threads, each with its own sampler built from its group.
  on_threads(3, [](std::shared_ptr<ProcessGroup> g) {
    DistributedSampler s(12, *g, {.seed = 9});
    s.set_epoch(1);
    Tensor mine = from_vector(s.indices(), {4}, {DType::i64});
    Tensor all = empty({12}, {DType::i64});
    g->allgather(all, mine)->wait();
    std::vector<int64_t> v = all.to_vector<int64_t>();
    std::sort(v.begin(), v.end());
    for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(v[static_cast<std::size_t>(i)], i);
  });
}

TEST(DistributedSampler, WarnsOnceWhenAnEpochIsRepeatedWithoutSetEpoch) {
  DistributedSampler s(10, 2, 0);
  ::testing::internal::CaptureStderr();
  s.indices();
  s.set_epoch(1);
  s.indices();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // set_epoch was called: no warning
  ::testing::internal::CaptureStderr();
  s.indices();
  s.indices();
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("epoch 1 is iterated again without set_epoch()"), std::string::npos)
      << warning;
  EXPECT_EQ(warning.find("warning", 1), std::string::npos) << "warned twice: " << warning;
  // Without shuffling there is nothing to repeat.
  DistributedSampler fixed(10, 2, 0, {.shuffle = Shuffle::off});
  ::testing::internal::CaptureStderr();
  fixed.indices();
  fixed.indices();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(DistributedSampler, RejectsBadArguments) {
  EXPECT_TRUE(throws_error([] { DistributedSampler(10, 2, 2); }, {"rank 2", "[0, 2)"}));
  EXPECT_TRUE(throws_error([] { DistributedSampler(10, 0, 0); }, {"num_replicas", "got 0"}));
  EXPECT_TRUE(throws_error([] { DistributedSampler(-1, 2, 0); }, {"dataset size", "-1"}));
  EXPECT_TRUE(throws_error([] { DistributedSampler(10, 4, 0).is_padding(3); }, {"position 3"}));
}

// Distributed evaluation over a test set whose size no rank count divides: the totals summed
// over ranks equal a one-process evaluation — every sample counted once, padding never.
void evaluation_counts_each_sample_once(std::shared_ptr<ProcessGroup> g, int64_t n) {
  const int64_t classes = 4, batch = 3;
  const Tensor logits_all = det_normal({n, classes}, 77, DType::f64);
  const Tensor labels_all = det_labels(n, classes, 78);
  // One process: every sample once.
  EvalTotals expected;
  {
    DistributedSampler one(n, 1, 0, {.shuffle = Shuffle::off});
    DistributedEvaluator e(one);
    e.add(logits_all, labels_all);
    expected = e.local();
  }
  ASSERT_EQ(expected.count, n);
  DistributedSampler sampler(n, *g, {.seed = 3});
  sampler.set_epoch(2);
  const std::vector<int64_t> mine = sampler.indices();
  DistributedEvaluator eval(sampler);
  for (std::size_t k = 0; k < mine.size(); k += batch) {  // batches in sampler order
    const std::size_t end = std::min(mine.size(), k + batch);
    std::vector<Tensor> rows, labels;
    for (std::size_t i = k; i < end; ++i) {
      rows.push_back(logits_all.narrow(0, mine[i], 1));
      labels.push_back(labels_all.narrow(0, mine[i], 1));
    }
    eval.add(cat(rows), cat(labels));
  }
  EXPECT_EQ(eval.position(), sampler.size());
  EXPECT_EQ(eval.local().count, sampler.num_real_samples());
  const EvalTotals total = eval.all_ranks(*g);
  EXPECT_EQ(total.count, n);
  EXPECT_EQ(total.correct, expected.correct);
  EXPECT_NEAR(total.loss_sum, expected.loss_sum, 1e-9);
  EXPECT_NEAR(total.accuracy(), expected.accuracy(), 1e-12);
  EXPECT_TRUE(
      throws_error([&] { eval.add(logits_all.narrow(0, 0, 1), labels_all.narrow(0, 0, 1)); },
                   {"DistributedEvaluator", "only"}));
}

// Logits on the model's device (here a second logical CPU device, as a GPU's would be) with
// labels on the host, as the training loop hands them over: the same totals.
TEST(DistributedSampler, EvaluatorTakesLogitsOnAnotherDevice) {
  const int64_t n = 7, classes = 3;
  const Tensor logits = det_normal({n, classes}, 5, DType::f32);
  const Tensor labels = det_labels(n, classes, 6);
  DistributedSampler sampler(n, 1, 0, {.shuffle = Shuffle::off});
  DistributedEvaluator host(sampler), device(sampler);
  host.add(logits, labels);
  device.add(logits.to(Device::cpu(1)), labels);
  EXPECT_EQ(device.local().count, n);
  EXPECT_EQ(device.local().correct, host.local().correct);
  EXPECT_EQ(device.local().loss_sum, host.local().loss_sum);
}

TEST(DistributedSampler, EvaluationNeverCountsPadding) {
  for (int ranks : {2, 3, 4})
    on_threads(ranks, [](auto g) { evaluation_counts_each_sample_once(g, 13); });
  on_threads(4,
             [](auto g) { evaluation_counts_each_sample_once(g, 2); });  // ranks 2, 3: all padding
}

}  // namespace
}  // namespace rg::parallel
