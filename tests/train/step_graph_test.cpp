// --cuda-graphs' bookkeeping (train/step_graph.h) without a GPU: what refuses a captured step,
// and, with a stand-in graph whose replay runs the captured body again (what a replay does, on
// the host), that the steps it takes equal eager steps bit for bit — the batch copied into the
// captured inputs, each step's rate written where the update reads it, partial batches eager,
// a new capture when another set of parameters trains. The CUDA graph itself runs in
// tests/gpu/cuda_graph_test.cpp.
#include "train/step_graph.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/rng.h"
#include "nn/models/zoo.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg::train {
namespace {
using namespace rg::testing;

// Replays by running the captured body again; records nothing at capture, as CUDA does.
class RerunGraph final : public CapturedWork {
 public:
  explicit RerunGraph(int* captures) : captures_(captures) {}
  void capture(const std::function<void()>& body) override {
    body_ = body;
    ++*captures_;
  }
  void replay() override { body_(); }

 private:
  int* captures_;
  std::function<void()> body_;
};

struct TrainedModel {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<SGD> optimizer;
};

TrainedModel make_run() {
  manual_seed(11);
  TrainedModel r{nn::make_model("resnet20@0.25", 10), nullptr};
  r.optimizer = std::make_unique<SGD>(
      r.model->parameters(),
      SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = Nesterov::on});
  return r;
}

// Seven batches of 6 and a last one of 4 (the partial batch), fixed by the seed.
std::vector<data::Batch> batches() {
  manual_seed(12);
  std::vector<data::Batch> out;
  for (int i = 0; i < 8; ++i) {
    const int64_t n = i == 7 ? 4 : 6;
    out.push_back({randn({n, 3, 8, 8}), (rand({n}) * 10.0).to(DType::i64), Tensor(), {}});
  }
  return out;
}

TEST(StepGraph, StepsLikeEagerStepsBitForBit) {
  const std::vector<data::Batch> data = batches();
  TrainedModel eager = make_run(), graphed = make_run();
  graphed.optimizer->keep_lr_on_device(Device::cpu());
  int captures = 0;
  StepGraph graph(Device::cpu(), 2, [&] { return std::make_unique<RerunGraph>(&captures); });
  auto step_of = [](TrainedModel& r) {
    return [&r](const data::Batch& b) {
      r.optimizer->zero_grad();
      StepOutput out{cross_entropy(r.model->forward(b.images), b.labels), b.images.size(0), {}};
      out.loss.backward();
      r.optimizer->step();
      return out;
    };
  };
  const std::function<StepOutput(const data::Batch&)> eager_step = step_of(eager),
                                                      graphed_step = step_of(graphed);
  Tensor whiten = graphed.model->parameters()[0], eager_whiten = eager.model->parameters()[0];
  int step = 0;
  for (int epoch = 0; epoch < 2; ++epoch)
    for (const data::Batch& b : data) {
      ++step;
      // A schedule: a new rate every step, which the captured update must read.
      for (TrainedModel* r : {&eager, &graphed}) r->optimizer->set_lr(0, 0.05 / step);
      // airbench94 freezes its whitening layer after a while: another step from then on.
      if (step == 12) {
        whiten.set_requires_grad(false);
        eager_whiten.set_requires_grad(false);
      }
      const double expected = eager_step(b).loss.item();
      const StepOutput out = graph.step(b, *graphed.optimizer, graphed_step);
      EXPECT_EQ(out.loss.item(), expected) << "step " << step;
      EXPECT_EQ(out.samples, b.images.size(0));
    }
  const auto a = eager.model->named_parameters(), g = graphed.model->named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(all_close(g[i].second, a[i].second, 0, 0)) << a[i].first;
  const auto ab = eager.model->named_buffers(), gb = graphed.model->named_buffers();
  for (std::size_t i = 0; i < ab.size(); ++i)
    EXPECT_TRUE(all_close(gb[i].second, ab[i].second, 0, 0)) << ab[i].first;
  // 16 steps: 2 warm-up and 2 partial batches eager, 12 replays, captured again at step 12.
  EXPECT_EQ(graph.eager_steps(), 4);
  EXPECT_EQ(graph.replays(), 12);
  EXPECT_EQ(captures, 2);
}

TEST(StepGraph, SaysWhatStopsACapture) {
  auto model = nn::make_model("resnet20@0.25", 10);
  SGD sgd(model->parameters(), {.lr = 0.1});
  AdamW adamw(model->parameters(), {});
  MixedPrecision f32(*model, {});
  const Device gpu = Device::cuda(0);
  EXPECT_TRUE(throws_error([&] { StepGraph::check("app", Device::cpu(), f32, true, false, sgd); },
                           {"app: --cuda-graphs", "on a GPU", "cpu"}));
  auto scaled_model = nn::make_model("resnet20@0.25", 10);
  MixedPrecision fp16(*scaled_model, {OptLevel::O1, DType::f16, {}});
  EXPECT_TRUE(throws_error([&] { StepGraph::check("app", gpu, fp16, true, false, sgd); },
                           {"loss scaler", "--loss-scale none"}));
  EXPECT_TRUE(throws_error([&] { StepGraph::check("app", gpu, f32, false, false, sgd); },
                           {"one process", "DDP"}));
  EXPECT_TRUE(
      throws_error([&] { StepGraph::check("app", gpu, f32, true, true, sgd); }, {"--trace"}));
  EXPECT_TRUE(throws_error([&] { StepGraph::check("app", gpu, f32, true, false, adamw); },
                           {"AdamW", "host", "use SGD"}));
  EXPECT_TRUE(throws_error([&] { StepGraph::check("app", gpu, f32, true, false, sgd, 4); },
                           {"app: --cuda-graphs", "--accumulate-steps 4", "drop one"}));
  EXPECT_TRUE(throws_error([] { StepGraph(Device::cpu(), 0); }, {"at least one eager step"}));
  EXPECT_TRUE(throws_error([] { make_cuda_graph(Device::cpu()); }, {"needs a GPU", "cpu"}));
}

}  // namespace
}  // namespace rg::train
