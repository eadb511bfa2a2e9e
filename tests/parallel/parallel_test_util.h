#pragma once
// Shared by the parallel tests: deterministic data, small models, a process group that
// records the collectives it is asked for, and the *bodies* of the equivalence tests. A body
// takes the rank's process group and checks its own rank's results with gtest assertions, so
// the same body runs with ranks as threads (ThreadGroup, run_ranks) and, once the MPI backend
// is in, with one process per rank under mpirun.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/rng.h"
#include "nn/layers.h"
#include "ops/ops.h"
#include "optim/sgd.h"
#include "parallel/ddp.h"
#include "parallel/horovod.h"
#include "parallel/sync_batch_norm.h"
#include "parallel/thread_group.h"
#include "tests/support/fixtures.h"

namespace rg::parallel::testing {

using rg::testing::all_close;

// Values drawn from N(mean, std) by (seed, element index) only: the same on every rank and
// thread, without touching the (not thread-safe) default generator.
inline Tensor det_normal(const Shape& shape, uint64_t seed, DType dtype = DType::f32,
                         double mean = 0, double std = 1) {
  std::vector<double> v(static_cast<std::size_t>(numel_of(shape)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = mean + std * philox_normal(seed, 7, i);
  return from_vector(v, shape, {dtype});
}

inline Tensor det_labels(int64_t n, int64_t classes, uint64_t seed) {
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<int64_t>(philox_uniform_f64(seed, 11, i) * static_cast<double>(classes));
  return from_vector(v, {n}, {DType::i64});
}

// Rows [r·B/N, (r+1)·B/N) of a global batch: rank r's share.
inline Tensor rank_rows(const Tensor& global, const ProcessGroup& g) {
  const int64_t per = global.size(0) / g.size();
  return global.narrow(0, g.rank() * per, per);
}

enum class Norm { none, batch };

// conv(3→4) [BN] ReLU → conv(4→6, stride 2) [BN] ReLU → flatten → linear(54→5), on 6x6 images.
// BatchNorms are held by address so convert_sync_batchnorm can swap them.
class SmallConvNet : public nn::Module {
 public:
  explicit SmallConvNet(Norm norm) {
    const nn::Bias bias = norm == Norm::batch ? nn::Bias::without : nn::Bias::with;
    conv1_ = std::make_shared<nn::Conv2d>(3, 4, nn::Size2{3, 3},
                                          nn::Conv2dOptions{.padding = {1, 1}, .bias = bias});
    conv2_ = std::make_shared<nn::Conv2d>(
        4, 6, nn::Size2{3, 3},
        nn::Conv2dOptions{.stride = {2, 2}, .padding = {1, 1}, .bias = bias});
    fc_ = std::make_shared<nn::Linear>(54, 5);
    register_module("conv1", &conv1_);
    if (norm == Norm::batch) {
      bn1_ = std::make_shared<nn::BatchNorm2d>(4);
      register_module("bn1", &bn1_);
    }
    register_module("conv2", &conv2_);
    if (norm == Norm::batch) {
      bn2_ = std::make_shared<nn::BatchNorm2d>(6);
      register_module("bn2", &bn2_);
    }
    register_module("fc", &fc_);
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = conv1_->forward(x);
    if (bn1_) y = bn1_->forward(y);
    y = conv2_->forward(relu(y));
    if (bn2_) y = bn2_->forward(y);
    return fc_->forward(relu(y).flatten(1));
  }
  std::string type_name() const override { return "SmallConvNet"; }

  std::shared_ptr<nn::Conv2d> conv1_, conv2_;
  std::shared_ptr<nn::BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<nn::Linear> fc_;
};

// Builds a model from a seed. The default generator is not thread-safe, so ranks that are
// threads take turns.
template <class M, class... Args>
std::shared_ptr<M> seeded(uint64_t seed, DType dtype, Args&&... args) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  manual_seed(seed);
  auto m = std::make_shared<M>(std::forward<Args>(args)...);
  m->to(dtype);
  return m;
}

// Forwards to another group and reports each collective to `log` (called in the rank's
// thread) before issuing it.
class RecordingGroup final : public ProcessGroup {
 public:
  RecordingGroup(std::shared_ptr<ProcessGroup> inner, std::function<void(const std::string&)> log)
      : inner_(std::move(inner)), log_(std::move(log)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int local_rank() const override { return inner_->local_rank(); }
  int local_size() const override { return inner_->local_size(); }
  std::string backend() const override { return inner_->backend(); }
  std::shared_ptr<Work> allreduce(const Tensor& t, ReduceOp op) override {
    log_("allreduce " + std::to_string(t.numel()) + " x " + std::string(dtype_name(t.dtype())));
    return inner_->allreduce(t, op);
  }
  std::shared_ptr<Work> broadcast(const Tensor& t, int root) override {
    log_("broadcast " + std::to_string(t.numel()));
    return inner_->broadcast(t, root);
  }
  std::shared_ptr<Work> allgather(const Tensor& out, const Tensor& in) override {
    log_("allgather " + std::to_string(in.numel()));
    return inner_->allgather(out, in);
  }
  std::shared_ptr<Work> reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) override {
    log_("reduce_scatter " + std::to_string(in.numel()));
    return inner_->reduce_scatter(out, in, op);
  }
  std::shared_ptr<Work> barrier() override {
    log_("barrier");
    return inner_->barrier();
  }

 private:
  std::shared_ptr<ProcessGroup> inner_;
  std::function<void(const std::string&)> log_;
};

// Runs body(group of rank r) on n ranks as threads.
inline void on_threads(int n, const std::function<void(std::shared_ptr<ProcessGroup>)>& body) {
  auto groups = ThreadGroup::create(n, std::chrono::seconds(20));
  run_ranks(n, [&](int r) { body(groups[static_cast<std::size_t>(r)]); });
}

// ---- equivalence bodies ----------------------------------------------------------------------

// Tolerances. In f64 the only differences between N ranks × B/N and one process × B are the
// order of additions (per-rank partial sums of the weight gradients; Chan's merge of BN
// statistics instead of one pass): about 1e-16 relative per operation, a few 1e-15 after K
// steps. Any real error — a missing 1/N, a stale or lost bucket, per-rank BN statistics —
// is of order 1e-2. So f64 runs allow 1e-11 absolute + 1e-9 relative: tight enough to prove
// the algorithm, loose enough for reassociation. f32 runs (rounding 6e-8 per operation,
// amplified through three SGD steps) allow 1e-5 + 1e-4 relative.
struct Tolerance {
  double atol, rtol;
};
inline Tolerance tolerance_for(DType dtype) {
  return dtype == DType::f64 ? Tolerance{1e-11, 1e-9} : Tolerance{1e-5, 1e-4};
}

// DDP with N ranks × batch B/N against one process with batch B (every rank also runs the
// single-process reference): the gradients of the first step, then after `steps` steps of SGD
// with momentum and weight decay the parameters and buffers. With Norm::batch the replicas
// use SyncBatchNorm (convert_sync_batchnorm) and the reference plain BatchNorm2d.
inline void ddp_matches_one_process(std::shared_ptr<ProcessGroup> group, Norm norm, DType dtype,
                                    int steps = 3) {
  const int64_t batch = 12;  // divisible by 2, 3 and 4
  const Tolerance tol = tolerance_for(dtype);
  // Each rank starts from different weights: DDP's broadcast must make them rank 0's.
  std::shared_ptr<nn::Module> replica =
      seeded<SmallConvNet>(100 + static_cast<uint64_t>(group->rank()), dtype, norm);
  if (norm == Norm::batch) replica = convert_sync_batchnorm(replica, group);
  // Small buckets, so that several allreduces take part.
  DistributedDataParallel ddp(replica, group, {.bucket_cap_bytes = 512, .first_bucket_bytes = 64});
  EXPECT_EQ(ddp.buckets().size(), 3u);
  auto reference = seeded<SmallConvNet>(7, dtype, norm);
  reference->load_state_dict(ddp.state_dict());
  const SGDOptions options{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3};
  SGD opt(ddp.parameters(), options), ref_opt(reference->parameters(), options);
  for (int step = 0; step < steps; ++step) {
    const Tensor x = det_normal({batch, 3, 6, 6}, 1000 + step, dtype, 0.5, 2.0);
    const Tensor y = det_labels(batch, 5, 2000 + step);
    ref_opt.zero_grad();
    cross_entropy(reference->forward(x), y).backward();
    opt.zero_grad();
    cross_entropy(ddp.forward(rank_rows(x, *group)), rank_rows(y, *group)).backward();
    EXPECT_TRUE(ddp.last_iteration().synchronized);
    if (step == 0) {
      const auto ref = reference->named_parameters();
      const auto mine = ddp.named_parameters();
      ASSERT_EQ(ref.size(), mine.size());
      for (std::size_t i = 0; i < ref.size(); ++i) {
        ASSERT_EQ(ref[i].first, mine[i].first);
        EXPECT_TRUE(all_close(mine[i].second.grad(), ref[i].second.grad(), tol.atol, tol.rtol))
            << "rank " << group->rank() << " gradient of " << mine[i].first;
      }
    }
    ref_opt.step();
    opt.step();
  }
  const auto ref_state = reference->state_dict();
  for (const auto& [name, t] : ddp.state_dict())
    EXPECT_TRUE(all_close(t, ref_state.at(name), tol.atol, tol.rtol))
        << "rank " << group->rank() << " after " << steps << " steps: " << name;
}

// SyncBatchNorm over per-rank batches of the given sizes (zeros allowed) against BatchNorm over
// their concatenation: output, input gradient, weight and bias gradients (summed over ranks:
// each rank returns its share), running statistics (and those equal on every rank).
inline void sync_batch_norm_matches_batch_norm(std::shared_ptr<ProcessGroup> group,
                                               const std::vector<int64_t>& sizes, DType dtype,
                                               double mean = 0.5, double std = 2.0) {
  ASSERT_EQ(static_cast<int>(sizes.size()), group->size());
  const int r = group->rank();
  const int64_t c = 3, total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  int64_t first = 0;
  for (int q = 0; q < r; ++q) first += sizes[static_cast<std::size_t>(q)];
  const Tensor x_all = det_normal({total, c, 2, 3}, 31, dtype, mean, std);
  const Tensor gy_all = det_normal({total, c, 2, 3}, 32, dtype);
  const double atol = dtype == DType::f64 ? 1e-12 : 1e-5, rtol = dtype == DType::f64 ? 1e-10 : 1e-4;

  // Reference: BatchNorm over the whole batch, loss Σ y·gy.
  nn::BatchNorm2d bn(c);
  bn.to(dtype);
  ASSERT_EQ(bn.weight_.dtype(), dtype);
  {
    NoGradGuard no_grad;
    copy_strided(bn.weight_, det_normal({c}, 33, dtype, 1.0, 0.3));
    copy_strided(bn.bias_, det_normal({c}, 34, dtype));
  }
  Tensor x_ref = x_all.clone().set_requires_grad(true);
  Tensor y_ref = bn.forward(x_ref);
  sum(y_ref * gy_all).backward();

  SyncBatchNorm sbn(c, group);
  sbn.to(dtype);
  {
    NoGradGuard no_grad;
    copy_strided(sbn.weight_, det_normal({c}, 33, dtype, 1.0, 0.3));
    copy_strided(sbn.bias_, det_normal({c}, 34, dtype));
  }
  const int64_t n = sizes[static_cast<std::size_t>(r)];
  Tensor x = x_all.narrow(0, first, n).clone().set_requires_grad(true);
  Tensor y = sbn.forward(x);
  ASSERT_EQ(y.shape(), x.shape());
  sum(y * gy_all.narrow(0, first, n)).backward();
  EXPECT_TRUE(all_close(y, y_ref.narrow(0, first, n), atol, rtol)) << "rank " << r << " output";
  EXPECT_TRUE(all_close(x.grad(), x_ref.grad().narrow(0, first, n), atol, rtol))
      << "rank " << r << " input gradient";
  // Weight and bias gradients: this rank's share; their sum over ranks is BatchNorm's.
  Tensor gw = sbn.weight_.grad().to(DType::f64).clone(),
         gb = sbn.bias_.grad().to(DType::f64).clone();
  group->allreduce(gw, ReduceOp::sum)->wait();
  group->allreduce(gb, ReduceOp::sum)->wait();
  EXPECT_TRUE(all_close(gw, bn.weight_.grad().to(DType::f64), atol, rtol)) << "rank " << r;
  EXPECT_TRUE(all_close(gb, bn.bias_.grad().to(DType::f64), atol, rtol)) << "rank " << r;
  EXPECT_TRUE(all_close(sbn.running_mean_, bn.running_mean_, atol, rtol)) << "rank " << r;
  EXPECT_TRUE(all_close(sbn.running_var_, bn.running_var_, atol, rtol)) << "rank " << r;
  EXPECT_EQ(sbn.num_batches_tracked_.item(), 1);
  // Bit-identical running statistics on every rank: gather them and compare with rank 0's.
  for (const Tensor& stat : {sbn.running_mean_, sbn.running_var_}) {
    Tensor all = empty({c * group->size()}, {dtype});
    group->allgather(all, stat.contiguous())->wait();
    for (int q = 1; q < group->size(); ++q)
      EXPECT_EQ(all.narrow(0, q * c, c).to_vector<double>(),
                all.narrow(0, 0, c).to_vector<double>());
  }
}

// Gradient accumulation: each rank splits its B/N samples into two micro-batches, the first
// backward under no_sync() (no communication), the second synchronised; the result must be
// the single-process gradient of the mean loss over all B samples.
inline void ddp_no_sync_matches_one_process(std::shared_ptr<ProcessGroup> group, DType dtype) {
  const int64_t batch = 24;  // two equal micro-batches per rank for 2, 3 and 4 ranks
  const Tolerance tol = tolerance_for(dtype);
  int allreduces = 0;
  auto counting = std::make_shared<RecordingGroup>(
      group, [&](const std::string& what) { allreduces += what.rfind("allreduce", 0) == 0; });
  auto replica = seeded<SmallConvNet>(5, dtype, Norm::none);
  DistributedDataParallel ddp(replica, counting);
  auto reference = seeded<SmallConvNet>(6, dtype, Norm::none);
  reference->load_state_dict(ddp.state_dict());
  const Tensor x = det_normal({batch, 3, 6, 6}, 40, dtype), y = det_labels(batch, 5, 41);
  cross_entropy(reference->forward(x), y).backward();

  const Tensor xs = rank_rows(x, *group), ys = rank_rows(y, *group);
  const int64_t half = xs.size(0) / 2;
  allreduces = 0;
  {
    auto guard = ddp.no_sync();
    (cross_entropy(ddp.forward(xs.narrow(0, 0, half)), ys.narrow(0, 0, half)) * 0.5).backward();
  }
  EXPECT_EQ(allreduces, 0) << "no_sync() must not communicate";
  (cross_entropy(ddp.forward(xs.narrow(0, half, half)), ys.narrow(0, half, half)) * 0.5).backward();
  EXPECT_EQ(allreduces, static_cast<int>(ddp.buckets().size()));
  const auto ref = reference->named_parameters();
  const auto mine = ddp.named_parameters();
  for (std::size_t i = 0; i < ref.size(); ++i)
    EXPECT_TRUE(all_close(mine[i].second.grad(), ref[i].second.grad(), tol.atol, tol.rtol))
        << "rank " << group->rank() << " accumulated gradient of " << mine[i].first;
}

// Horovod's workflow: broadcast_parameters from rank 0, DistributedOptimizer with
// backward_passes_per_step = k; each rank runs k backward passes over its share of the global
// batch (loss divided by k) per step. After `steps` steps the parameters must equal one
// process's with the whole batch.
inline void distributed_optimizer_matches_one_process(std::shared_ptr<ProcessGroup> group,
                                                      int passes_per_step, int steps = 3) {
  const int64_t batch = 12 * passes_per_step;
  const Tolerance tol = tolerance_for(DType::f64);
  auto replica =
      seeded<SmallConvNet>(200 + static_cast<uint64_t>(group->rank()), DType::f64, Norm::none);
  broadcast_parameters(*replica, 0, *group);
  auto reference = seeded<SmallConvNet>(9, DType::f64, Norm::none);
  reference->load_state_dict(replica->state_dict());
  const SGDOptions options{.lr = 0.05, .momentum = 0.9};
  SGD sgd(replica->parameters(), options), ref_opt(reference->parameters(), options);
  DistributedOptimizer opt(sgd, {.backward_passes_per_step = passes_per_step}, group);
  for (int step = 0; step < steps; ++step) {
    const Tensor x = det_normal({batch, 3, 6, 6}, 300 + step, DType::f64);
    const Tensor y = det_labels(batch, 5, 400 + step);
    ref_opt.zero_grad();
    cross_entropy(reference->forward(x), y).backward();
    ref_opt.step();
    opt.zero_grad();
    const Tensor xs = rank_rows(x, *group), ys = rank_rows(y, *group);
    const int64_t micro = xs.size(0) / passes_per_step;
    for (int k = 0; k < passes_per_step; ++k)
      (cross_entropy(replica->forward(xs.narrow(0, k * micro, micro)),
                     ys.narrow(0, k * micro, micro)) *
       (1.0 / passes_per_step))
          .backward();
    opt.step();
  }
  const auto ref_state = reference->state_dict();
  for (const auto& [name, t] : replica->state_dict())
    EXPECT_TRUE(all_close(t, ref_state.at(name), tol.atol, tol.rtol))
        << "rank " << group->rank() << " after " << steps << " steps: " << name;
}

}  // namespace rg::parallel::testing
