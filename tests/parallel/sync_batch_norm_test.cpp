#include "parallel/sync_batch_norm.h"

#include <gtest/gtest.h>

#include "nn/models/unet.h"
#include "nn/models/zoo.h"
#include "tests/parallel/parallel_test_util.h"

namespace rg::parallel {
namespace {
using rg::testing::all_close;
using rg::testing::throws_error;
using namespace rg::parallel::testing;

TEST(SyncBatchNorm, EqualsBatchNormOverTheGlobalBatch) {
  on_threads(2, [](auto g) { sync_batch_norm_matches_batch_norm(g, {4, 4}, DType::f64); });
  on_threads(3, [](auto g) { sync_batch_norm_matches_batch_norm(g, {2, 3, 2}, DType::f64); });
  on_threads(4, [](auto g) { sync_batch_norm_matches_batch_norm(g, {1, 2, 3, 4}, DType::f64); });
}

TEST(SyncBatchNorm, UnevenAndEmptyPerRankBatches) {
  // A rank with no samples joins every collective and adds nothing.
  on_threads(2, [](auto g) { sync_batch_norm_matches_batch_norm(g, {0, 5}, DType::f64); });
  on_threads(3, [](auto g) { sync_batch_norm_matches_batch_norm(g, {3, 0, 1}, DType::f64); });
  on_threads(4, [](auto g) { sync_batch_norm_matches_batch_norm(g, {5, 0, 0, 2}, DType::f32); });
}

TEST(SyncBatchNorm, StableWhenTheMeanDwarfsTheSpread) {
  // Channels at 1000 ± 0.01 in f32: E[x²] − E[x]² would lose every digit of the variance
  // (1e6 vs 1e-4); merging (n, mean, M2) in f64 keeps them.
  on_threads(3, [](auto g) {
    sync_batch_norm_matches_batch_norm(g, {2, 3, 1}, DType::f32, 1000.0, 0.01);
  });
}

// Mixed precision (AMP O2): a bf16 input beside f32 parameters, as BatchNorm's mixed mode; the
// output and input gradient in bf16, the parameter gradients in f32.
TEST(SyncBatchNorm, SixteenBitInputWithFloat32Parameters) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    const int64_t c = 3;
    const Tensor x_all = testing::det_normal({8, c, 2, 3}, 41, DType::f32).to(DType::bf16);
    const Tensor gy_all = testing::det_normal({8, c, 2, 3}, 42, DType::f32).to(DType::bf16);
    nn::BatchNorm2d bn(c);
    bn.to(DType::bf16);  // keeps f32 parameters
    Tensor x_ref = x_all.clone().set_requires_grad(true);
    Tensor y_ref = bn.forward(x_ref);
    sum((y_ref * gy_all).to(DType::f32)).backward();

    SyncBatchNorm sbn(c, group);
    sbn.to(DType::bf16);
    ASSERT_EQ(sbn.weight_.dtype(), DType::f32);
    Tensor x = x_all.narrow(0, 4 * r, 4).clone().set_requires_grad(true);
    Tensor y = sbn.forward(x);
    sum((y * gy_all.narrow(0, 4 * r, 4)).to(DType::f32)).backward();
    EXPECT_EQ(y.dtype(), DType::bf16);
    EXPECT_EQ(x.grad().dtype(), DType::bf16);
    EXPECT_EQ(sbn.weight_.grad().dtype(), DType::f32);
    // Both compute in f64 from the same bf16 values and round once: within one bf16 ulp.
    const double bf16_ulp = 1.0 / 128;
    EXPECT_TRUE(
        all_close(y.to(DType::f32), y_ref.narrow(0, 4 * r, 4).to(DType::f32), 1e-6, bf16_ulp));
    EXPECT_TRUE(all_close(x.grad().to(DType::f32), x_ref.grad().narrow(0, 4 * r, 4).to(DType::f32),
                          1e-3, bf16_ulp));
    Tensor gw = sbn.weight_.grad().clone();
    group->allreduce(gw, ReduceOp::sum)->wait();
    EXPECT_TRUE(all_close(gw, bn.weight_.grad(), 1e-4, 1e-4));
  });
}

TEST(SyncBatchNorm, EvalUsesRunningStatisticsWithoutCommunication) {
  on_threads(2, [](std::shared_ptr<ProcessGroup> g) {
    int collectives = 0;
    auto recording =
        std::make_shared<RecordingGroup>(g, [&](const std::string&) { ++collectives; });
    SyncBatchNorm sbn(3, recording);
    {
      NoGradGuard no_grad;
      copy_strided(sbn.running_mean_, det_normal({3}, 1));
      copy_strided(sbn.running_var_, det_normal({3}, 2, DType::f32, 2.0, 0.1));
    }
    sbn.eval();
    const Tensor x = det_normal({g->rank() + 1, 3, 2, 2}, 3 + g->rank());  // uneven: no matter
    const Tensor expected = batch_norm(x, sbn.weight_, sbn.bias_, sbn.running_mean_,
                                       sbn.running_var_, BatchNormMode::eval);
    EXPECT_TRUE(all_close(sbn.forward(x), expected, 0, 0));
    EXPECT_EQ(collectives, 0);
    EXPECT_EQ(sbn.num_batches_tracked_.item(), 0);
  });
}

TEST(SyncBatchNorm, TrainingNeedsMoreThanOneValueOverAllRanks) {
  // One value per channel over both ranks (1x1 image on rank 0, none on rank 1): both fail alike.
  EXPECT_TRUE(throws_error(
      [] {
        on_threads(2, [](auto g) {
          SyncBatchNorm sbn(2, g);
          sbn.forward(zeros({g->rank() == 0 ? 1 : 0, 2, 1, 1}));
        });
      },
      {"sync_batch_norm", "more than 1 value per channel", "2 ranks", "got 1"}));
  auto solo = ThreadGroup::create(1);
  SyncBatchNorm sbn(2, solo[0]);
  EXPECT_TRUE(
      throws_error([&] { sbn.forward(zeros({2})); }, {"SyncBatchNorm", "(N, C, *)", "[2]"}));
  // A single rank is plain BatchNorm.
  const Tensor x = det_normal({4, 2, 3, 3}, 5);
  nn::BatchNorm2d bn(2);
  EXPECT_TRUE(all_close(sbn.forward(x), bn.forward(x), 1e-6, 1e-5));
}

TEST(SyncBatchNorm, ConvertReplacesEveryBatchNormAndSharesItsTensors) {
  auto groups = ThreadGroup::create(1);
  manual_seed(3);
  std::shared_ptr<nn::Module> net = nn::make_model("resnet20@0.25");
  net->eval();
  std::map<std::string, const TensorImpl*> before;
  for (const auto& [name, t] : net->state_dict()) before[name] = nullptr;
  std::vector<std::pair<std::string, Tensor>> params = net->named_parameters();
  int bns = 0;
  for (const auto& [name, m] : net->named_modules()) bns += m->type_name() == "BatchNorm2d";
  EXPECT_EQ(bns, 1 + 9 * 2 + 2);  // stem, two per block, two projection shortcuts

  int allgathers = 0;
  auto recording = std::make_shared<RecordingGroup>(
      groups[0], [&](const std::string& what) { allgathers += what.rfind("allgather", 0) == 0; });
  EXPECT_EQ(convert_sync_batchnorm(net, recording), net);  // the root is not a BatchNorm
  int syncs = 0, plain = 0;
  for (const auto& [name, m] : net->named_modules()) {
    syncs += m->type_name() == "SyncBatchNorm";
    plain += m->type_name() == "BatchNorm2d";
    EXPECT_FALSE(m->is_training()) << name;  // the mode is kept
  }
  EXPECT_EQ(syncs, bns);
  EXPECT_EQ(plain, 0);
  // Same names, same tensors: an optimizer built before the conversion still trains them.
  const auto after = net->named_parameters();
  ASSERT_EQ(after.size(), params.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].first, params[i].first);
    EXPECT_TRUE(after[i].second.same_as(params[i].second)) << after[i].first;
  }
  EXPECT_EQ(net->state_dict().size(), before.size());
  // The models' forward() calls the new modules (their members were rebound): one allgather
  // per SyncBatchNorm in a training forward.
  net->train();
  net->forward(det_normal({2, 3, 8, 8}, 9));
  EXPECT_EQ(allgathers, bns);

  // A BatchNorm root is replaced and returned.
  auto bn = std::make_shared<nn::BatchNorm2d>(4);
  auto converted = convert_sync_batchnorm(bn, groups[0]);
  EXPECT_EQ(converted->type_name(), "SyncBatchNorm");
  EXPECT_TRUE(converted->named_parameters()[0].second.same_as(bn->weight_));
  EXPECT_EQ(convert_sync_batchnorm(converted, groups[0]), converted);  // already converted
}

// The 3-D UNet under SyncBN (the seeds' setting): 2 ranks with half a batch of volumes each
// compute the outputs and input gradients of one process with the whole batch — its
// BatchNorm3d layers are found by the conversion and normalise over the global batch.
TEST(SyncBatchNorm, UNet3dOnTwoRanksEqualsOneProcess) {
  const nn::UNetConfig config{
      .dims = 3, .in_channels = 1, .num_classes = 2, .depth = 2, .base_width = 2};
  manual_seed(11);
  nn::UNet single(config);
  single.to(DType::f64);
  std::vector<std::shared_ptr<nn::Module>> replicas;
  for (int r = 0; r < 2; ++r) {
    auto m = std::make_shared<nn::UNet>(config);
    m->to(DType::f64);
    m->load_state_dict(single.state_dict());
    replicas.push_back(m);
  }
  const Tensor x_all = det_normal({4, 1, 4, 5, 4}, 21, DType::f64);
  const Tensor w_all = det_normal({4, 2, 4, 5, 4}, 22, DType::f64);  // loss = Σ y·w
  Tensor x1 = x_all.clone().set_requires_grad(true);
  const Tensor y1 = single.forward(x1);
  sum(mul(y1, w_all)).backward();
  auto groups = ThreadGroup::create(2, std::chrono::seconds(20));
  std::vector<Tensor> ys(2), gxs(2);
  run_ranks(2, [&](int r) {
    auto net = convert_sync_batchnorm(replicas[static_cast<std::size_t>(r)],
                                      groups[static_cast<std::size_t>(r)]);
    Tensor x = x_all.narrow(0, 2 * r, 2).clone().set_requires_grad(true);
    const Tensor y = net->forward(x);
    sum(mul(y, w_all.narrow(0, 2 * r, 2))).backward();
    ys[static_cast<std::size_t>(r)] = y.detach();
    gxs[static_cast<std::size_t>(r)] = x.grad();
  });
  int syncs = 0;
  for (const auto& [name, m] : replicas[0]->named_modules())
    syncs += m->type_name() == "SyncBatchNorm";
  EXPECT_EQ(syncs, 2 * (1 + 2 + 2));  // two per DoubleConv: inc, 2 downs, 2 ups
  EXPECT_TRUE(all_close(cat(ys), y1, 1e-10, 1e-10));
  EXPECT_TRUE(all_close(cat(gxs), x1.grad(), 1e-10, 1e-10));
}

TEST(SyncBatchNorm, ConvertRefusesModelsThatHoldBatchNormsByValue) {
  // A module whose typed member was registered by value could keep calling the old BatchNorm.
  class ByValue : public nn::Module {
   public:
    ByValue() { bn_ = register_module("bn", std::make_shared<nn::BatchNorm2d>(2)); }
    Tensor forward(const Tensor& x) override { return bn_->forward(x); }
    std::string type_name() const override { return "ByValue"; }
    std::shared_ptr<nn::BatchNorm2d> bn_;
  };
  auto groups = ThreadGroup::create(1);
  EXPECT_TRUE(throws_error([&] { convert_sync_batchnorm(std::make_shared<ByValue>(), groups[0]); },
                           {"ByValue.replace_child('bn')", "registered by value"}));
}

}  // namespace
}  // namespace rg::parallel
