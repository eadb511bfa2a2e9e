// Gradient accumulation (train/accumulate.h): K micro-batches per optimizer step equal one step
// of the K-times-larger batch — alone, under DDP (one allreduce per step, in the last backward),
// under ZeRO-1 and under AMP O2 with a loss scaler — for a model without BatchNorm; ranks as
// threads. train_cifar's and train_unet's --accumulate-steps runs are in tests/apps, the judged
// rows in check_equivalence ("... + accumulate K").
#include "train/accumulate.h"

#include <gtest/gtest.h>

#include "parallel/data_parallel_functions.h"
#include "parallel/found_inf.h"
#include "parallel/zero.h"
#include "tests/parallel/parallel_test_util.h"

namespace rg::train {
namespace {
using namespace rg::parallel;
using namespace rg::parallel::testing;
using rg::testing::throws_error;

constexpr int64_t kBatch = 24;  // per step over all ranks: divisible by 2 and 3, then by 2 again

TEST(Accumulate, WeightsAreEachMicroBatchsShareOfTheSamples) {
  EXPECT_EQ(micro_batch_weights({4, 4, 4}), (std::vector<double>{1.0 / 3, 1.0 / 3, 1.0 / 3}));
  EXPECT_EQ(micro_batch_weights({8, 2}), (std::vector<double>{0.8, 0.2}));
  EXPECT_EQ(micro_batch_weights({5}), (std::vector<double>{1.0}));
  EXPECT_TRUE(throws_error([] { micro_batch_weights({0, 0}); }, {"no sample"}));
  EXPECT_TRUE(throws_error([] { micro_batch_weights({3, -1}); }, {"-1 samples"}));
}

enum class Wrap { none, ddp, zero };

// `steps` SGD steps of a fresh net (seed 3, no BatchNorm); each rank trains its rows of every
// step's batch in `micro` micro-batches (split_sizes: uneven when they do not divide), under
// DDP over `group` (Wrap::ddp, ::zero: with ZeRO-1 over it) or alone. Returns the parameters.
std::map<std::string, Tensor> train(Wrap wrap, std::shared_ptr<ProcessGroup> group, int micro,
                                    int steps, DType dtype, OptLevel level = OptLevel::O0) {
  auto net = seeded<SmallConvNet>(3, dtype, Norm::none);
  // A fixed scale: every run, alone or not, scales alike (a dynamic one could skip a step in
  // one run and not in another over a rounding difference).
  MixedPrecision amp(*net, {.level = level,
                            .dtype = DType::f16,
                            .scaler = {.mode = LossScaleMode::fixed, .init_scale = 256}});
  if (amp.scaler() && group->size() > 1) sync_found_inf(*amp.scaler(), group);
  std::unique_ptr<DistributedDataParallel> ddp;
  if (wrap != Wrap::none) ddp = std::make_unique<DistributedDataParallel>(net, group);
  SGD sgd(amp.optimizer_params(), {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3});
  std::unique_ptr<ZeroRedundancyOptimizer> sharded;
  if (wrap == Wrap::zero) {
    sharded = std::make_unique<ZeroRedundancyOptimizer>(*ddp, sgd, amp.optimizer_params());
    if (amp.scaler()) amp.scaler()->set_param_names({});  // it checks this rank's pieces (Trainer)
  }
  Optimizer& opt = sharded ? static_cast<Optimizer&>(*sharded) : sgd;
  nn::Module& model = ddp ? static_cast<nn::Module&>(*ddp) : *net;
  for (int step = 0; step < steps; ++step) {
    const Tensor x = det_normal({kBatch, 3, 6, 6}, 500 + step, dtype);
    const Tensor y = det_labels(kBatch, 5, 600 + step);
    const Tensor xs = ddp ? rank_rows(x, *group) : x, ys = ddp ? rank_rows(y, *group) : y;
    const std::vector<int64_t> sizes = split_sizes(xs.size(0), micro);
    const std::vector<double> weights = micro_batch_weights(sizes);
    opt.zero_grad();
    int64_t row = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const MicroBatch which = i + 1 < sizes.size() ? MicroBatch::more_follow : MicroBatch::last;
      Tensor logits;
      {
        MicroBatchForward in(ddp.get(), which);
        auto autocast = amp.autocast();
        logits = model.forward(amp.cast_input(xs.narrow(0, row, sizes[i])));
      }
      // The loss in f32 at least (O2's logits are f16; an f64 run stays f64).
      if (logits.dtype() == DType::f16) logits = logits.to(DType::f32);
      backward_micro_batch(cross_entropy(logits, ys.narrow(0, row, sizes[i])), weights[i], which,
                           ddp.get(), amp);
      row += sizes[i];
    }
    amp.unscale(opt);
    amp.step(opt);
    amp.update();
  }
  std::map<std::string, Tensor> state;
  const auto params = net->named_parameters();
  const std::vector<Tensor>& updated = amp.optimizer_params();  // O2: the f32 masters
  for (std::size_t i = 0; i < params.size(); ++i)
    state[params[i].first] = updated[i].to(DType::f64);
  return state;
}

void expect_close(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b,
                  double atol, double rtol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : b)
    EXPECT_TRUE(all_close(a.at(name), t, atol, rtol)) << what << ": " << name;
}

TEST(Accumulate, MicroBatchesAloneMatchTheLargerBatch) {
  const auto alone = ThreadGroup::create(1, std::chrono::seconds(20))[0];
  const Tolerance tol = tolerance_for(DType::f64);
  const auto whole = train(Wrap::none, alone, 1, 3, DType::f64);
  for (int micro : {2, 3, 5})  // 5: 5+5+5+5+4, uneven
    expect_close(train(Wrap::none, alone, micro, 3, DType::f64), whole, tol.atol, tol.rtol,
                 std::to_string(micro) + " micro-batches");
  // The proof can fail: one step off makes the weights differ far beyond the tolerance.
  const auto fewer = train(Wrap::none, alone, 2, 2, DType::f64);
  EXPECT_FALSE(all_close(fewer.at("fc.weight"), whole.at("fc.weight"), tol.atol, tol.rtol));
}

// Under DDP only the last micro-batch's backward communicates, and averages everything the
// others accumulated: N ranks × K micro-batches equal one process with the whole batch.
TEST(Accumulate, UnderDdpOneReductionPerStepMatchesTheLargerBatch) {
  const auto whole =
      train(Wrap::none, ThreadGroup::create(1, std::chrono::seconds(20))[0], 1, 3, DType::f64);
  const Tolerance tol = tolerance_for(DType::f64);
  for (int n : {2, 3})
    for (Wrap wrap : {Wrap::ddp, Wrap::zero})
      on_threads(n, [&](std::shared_ptr<ProcessGroup> group) {
        int reductions = 0;
        auto counting = std::make_shared<RecordingGroup>(group, [&](const std::string& what) {
          reductions += what.starts_with("allreduce") || what.starts_with("reduce_scatter");
        });
        const auto state = train(wrap, counting, 2, 3, DType::f64);
        const std::string what = "DDP " + std::to_string(n) +
                                 (wrap == Wrap::zero ? " + ZeRO-1" : "") + ", 2 micro-batches";
        expect_close(state, whole, tol.atol, tol.rtol, what);
        // As many reductions as the same steps without accumulation: one per bucket and step.
        const int accumulated = reductions;
        reductions = 0;
        train(wrap, counting, 1, 3, DType::f64);
        EXPECT_EQ(accumulated, reductions) << what;
      });
}

// O2 under DDP: the 16-bit gradients of the micro-batches stay in the model until the last
// backward, which DDP averages (MasterGrads::defer); the scaler unscales and checks once per
// step. Moving them into the masters after each micro-batch would leave the first ones
// unaveraged — a difference of the gradient's own size, far above f16's rounding.
TEST(Accumulate, AmpO2UnderDdpAveragesEveryMicroBatch) {
  const auto whole = train(Wrap::none, ThreadGroup::create(1, std::chrono::seconds(20))[0], 1, 2,
                           DType::f32, OptLevel::O2);
  on_threads(2, [&](std::shared_ptr<ProcessGroup> group) {
    for (Wrap wrap : {Wrap::ddp, Wrap::zero})
      expect_close(train(wrap, group, 3, 2, DType::f32, OptLevel::O2), whole, 2e-3, 2e-2,
                   wrap == Wrap::zero ? "O2, ZeRO-1 over DDP 2, 3 micro-batches"
                                      : "O2, DDP 2, 3 micro-batches");
  });
}

}  // namespace
}  // namespace rg::train
