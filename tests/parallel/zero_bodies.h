#pragma once
// The bodies of the ZeRO-1 tests (parallel/zero.h): on ranks as threads (tests/parallel/
// zero_test.cpp) and on MPI processes (tests/parallel_mpi/zero_test.cpp).

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "optim/adamw.h"
#include "parallel/zero.h"
#include "tests/parallel/parallel_test_util.h"

namespace rg::parallel::testing {

constexpr int64_t kBatch = 12;
// Small buckets: several of them, and parameters split between ranks' blocks.
inline const DDPOptions kBuckets{.bucket_cap_bytes = 512, .first_bucket_bytes = 64};

enum class Kind { sgd, adamw };

inline std::unique_ptr<Optimizer> make_optimizer(Kind kind, const std::vector<Tensor>& params) {
  // Two groups, as train_cifar's norm/bias groups: the last two tensors (fc) on their own.
  std::vector<Tensor> a(params.begin(), params.end() - 2), b(params.end() - 2, params.end());
  if (kind == Kind::sgd)
    return std::make_unique<SGD>(std::vector<ParamGroup<SGDOptions>>{
        {a, {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3}},
        {b, {.lr = 0.05, .momentum = 0.9, .nesterov = Nesterov::on}}});
  return std::make_unique<AdamW>(std::vector<ParamGroup<AdamWOptions>>{
      {a, {.lr = 1e-2, .weight_decay = 1e-2}}, {b, {.lr = 5e-3, .weight_decay = 0}}});
}

inline void train_step(nn::Module& model, Optimizer& opt, ProcessGroup& group, int step,
                       DType dtype) {
  const Tensor x = det_normal({kBatch, 3, 6, 6}, 1000 + step, dtype, 0.5, 2.0);
  const Tensor y = det_labels(kBatch, 5, 2000 + step);
  opt.zero_grad();
  cross_entropy(model.forward(rank_rows(x, group)), rank_rows(y, group)).backward();
  opt.step();
}

// The same model trained by DDP + `kind` and by DDP + ZeRO(`kind`), on every rank.
struct Pair {
  std::shared_ptr<DistributedDataParallel> ddp, zero_ddp;
  std::unique_ptr<Optimizer> plain, like;
  std::unique_ptr<ZeroRedundancyOptimizer> zero;
};

// first_layer: Frozen::yes takes the first layer's weight out of training (requires_grad
// false) in both models, while each optimizer still holds it, as train_cifar's are built over
// every parameter and airbench94's whitening weights are frozen.
enum class Frozen { no, yes };

inline std::shared_ptr<SmallConvNet> model_for(uint64_t seed, DType dtype, Frozen first_layer) {
  auto model = seeded<SmallConvNet>(seed, dtype, Norm::none);
  if (first_layer == Frozen::yes) Tensor(model->parameters()[0]).set_requires_grad(false);
  return model;
}

inline Pair make_pair_of(std::shared_ptr<ProcessGroup> group, Kind kind, DType dtype,
                         Frozen first_layer = Frozen::no) {
  Pair p;
  const auto seed = 100 + static_cast<uint64_t>(group->rank());  // DDP broadcasts rank 0's
  p.ddp = std::make_shared<DistributedDataParallel>(model_for(seed, dtype, first_layer), group,
                                                    kBuckets);
  p.zero_ddp = std::make_shared<DistributedDataParallel>(model_for(seed, dtype, first_layer), group,
                                                         kBuckets);
  p.plain = make_optimizer(kind, p.ddp->parameters());
  p.like = make_optimizer(kind, p.zero_ddp->parameters());
  p.zero = std::make_unique<ZeroRedundancyOptimizer>(*p.zero_ddp, *p.like);
  return p;
}

// bits: every element equal; tolerance: tolerance_for(dtype).
enum class Match { bits, tolerance };

inline void expect_same_weights(const nn::Module& a, const nn::Module& b, Match match, DType dtype,
                                const std::string& what) {
  const auto sb = b.state_dict();
  const Tolerance tol = tolerance_for(dtype);
  for (const auto& [name, t] : a.state_dict()) {
    if (match == Match::bits)
      EXPECT_EQ(t.to_vector<double>(), sb.at(name).to_vector<double>()) << what << ": " << name;
    else
      EXPECT_TRUE(all_close(t, sb.at(name), tol.atol, tol.rtol)) << what << ": " << name;
  }
}

inline void zero_matches_ddp(std::shared_ptr<ProcessGroup> group, Kind kind, DType dtype,
                             Match match, Frozen first_layer = Frozen::no) {
  Pair p = make_pair_of(group, kind, dtype, first_layer);
  const Tensor frozen_before = p.zero_ddp->parameters()[0].clone();
  for (int step = 0; step < 3; ++step) {
    train_step(*p.ddp, *p.plain, *group, step, dtype);
    train_step(*p.zero_ddp, *p.zero, *group, step, dtype);
  }
  expect_same_weights(
      *p.zero_ddp, *p.ddp, match, dtype,
      "rank " + std::to_string(group->rank()) + " of " + std::to_string(group->size()));
  if (first_layer == Frozen::yes) {
    EXPECT_EQ(p.zero_ddp->parameters()[0].to_vector<double>(), frozen_before.to_vector<double>())
        << "a frozen parameter moved";
  }
  // The pieces (and so their state) live where the parameters do.
  const Device device = p.zero_ddp->parameters()[0].device();
  for (std::size_t g = 0; g < p.zero->num_groups(); ++g)
    for (const Tensor& piece : p.zero->params(g)) EXPECT_EQ(piece.device(), device);
  // 1/N of the state per rank (blocks round up: at most N − 1 elements more per bucket).
  const auto n = static_cast<double>(group->size());
  EXPECT_NEAR(p.zero->shard_fraction(), 1 / n, 0.1);
  EXPECT_LE(p.zero->state_bytes(), p.plain->state_bytes() / n + 64 * 8 * 4);
  EXPECT_GT(p.zero->state_bytes(), 0);
  EXPECT_EQ(p.like->state_bytes(), 0);  // `like` keeps none
}

}  // namespace rg::parallel::testing
