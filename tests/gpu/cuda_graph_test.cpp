// CUDA graphs on a real GPU (core/cuda/graph.h, train/step_graph.h; issue 40 item 3): captured
// work replayed on new inputs equals eager execution, and a captured training step replayed
// with the schedule moving the rate equals eager steps bit for bit. From the simplest capture
// up, so that a failure says which part of the design does not hold. Skip without a GPU; the
// bookkeeping around the graph is tested everywhere in tests/train/step_graph_test.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/cuda/graph.h"
#include "core/rng.h"
#include "nn/models/zoo.h"
#include "ops/conv/conv.h"
#include "ops/ops.h"
#include "optim/optim.h"
#include "tests/support/fixtures.h"
#include "train/step_graph.h"

namespace rg {
namespace {
using namespace rg::testing;

// Pointwise kernels and the allocator's graph memory: an intermediate made and freed inside the
// capture, an output kept after it (made again at each launch), an input written between
// launches.
TEST(GpuGraph, ReplaysPointwiseWorkOnNewInputs) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  const Device gpu = Device::cuda(0);
  manual_seed(1);
  const Tensor x = randn({1000}).to(gpu);
  Tensor y;
  cuda::Graph graph(0);
  graph.capture([&] { y = relu(add(mul(x, 2.0), 1.0)); });
  for (int i = 0; i < 3; ++i) {
    copy_strided(x, randn({1000}).to(gpu));
    graph.replay();
    EXPECT_TRUE(all_close(y.to(Device::cpu()), relu(add(mul(x, 2.0), 1.0)).to(Device::cpu()), 0, 0))
        << "launch " << i;
  }
}

// Refusals inside a capture: a host read (CUDA's own error) and a random draw (ours).
TEST(GpuGraph, AHostReadOrARandomDrawInsideACaptureIsAnError) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  const Tensor x = ones({4}).to(Device::cuda(0));
  cuda::Graph reads(0);
  EXPECT_TRUE(throws_error([&] { reads.capture([&] { (void)sum(x).item(); }); }, {"cuda"}));
  cuda::Graph draws(0);
  EXPECT_TRUE(
      throws_error([&] { draws.capture([&] { (void)dropout(x, 0.5, DropoutMode::train); }); },
                   {"dropout", "CUDA graph capture", "repeat"}));
  // The device works on after a failed capture.
  EXPECT_EQ(sum(x).item(), 4.0);
}

// A train step (cuDNN convolutions, BatchNorm, cuBLAS, the multi-tensor SGD update reading its
// rate from the device) captured by StepGraph and replayed, against the same steps run eagerly:
// weights, BatchNorm statistics and losses equal bit for bit (deterministic convolutions, so that
// both runs take the same plans' arithmetic).
TEST(GpuGraph, ACapturedTrainStepReplaysLikeEagerSteps) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  const Device gpu = Device::cuda(0);
  const bool was_deterministic = deterministic_convolutions();
  set_deterministic_convolutions(true);
  struct TrainedModel {
    std::shared_ptr<nn::Module> model;
    std::unique_ptr<SGD> optimizer;
  };
  auto make = [&] {
    manual_seed(21);
    TrainedModel r{nn::make_model("resnet20@0.25", 10), nullptr};
    r.model->to(gpu);
    r.optimizer = std::make_unique<SGD>(
        r.model->parameters(),
        SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = Nesterov::on});
    return r;
  };
  TrainedModel eager = make(), graphed = make();
  graphed.optimizer->keep_lr_on_device(gpu);
  manual_seed(22);
  std::vector<data::Batch> batches;
  for (int i = 0; i < 6; ++i) {
    const int64_t n = i == 5 ? 4 : 8;
    batches.push_back(
        {randn({n, 3, 16, 16}).to(gpu), (rand({n}) * 10.0).to(DType::i64).to(gpu), Tensor(), {}});
  }
  auto step_of = [](TrainedModel& r) -> std::function<train::StepOutput(const data::Batch&)> {
    return [&r](const data::Batch& b) {
      r.optimizer->zero_grad();
      train::StepOutput out{
          cross_entropy(r.model->forward(b.images), b.labels), b.images.size(0), {}};
      out.loss.backward();
      r.optimizer->step();
      return out;
    };
  };
  const auto eager_step = step_of(eager), graphed_step = step_of(graphed);
  train::StepGraph graph(gpu, 2);
  int step = 0;
  for (int epoch = 0; epoch < 2; ++epoch)
    for (const data::Batch& b : batches) {
      ++step;
      for (TrainedModel* r : {&eager, &graphed}) r->optimizer->set_lr(0, 0.05 / step);
      const double expected = eager_step(b).loss.item();
      EXPECT_EQ(graph.step(b, *graphed.optimizer, graphed_step).loss.item(), expected)
          << "step " << step;
    }
  EXPECT_EQ(graph.replays(), 7);  // 12 steps: 2 warm-up and 2 partial batches eager
  const auto a = eager.model->named_parameters(), g = graphed.model->named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(all_close(g[i].second.to(Device::cpu()), a[i].second.to(Device::cpu()), 0, 0))
        << a[i].first;
  const auto ab = eager.model->named_buffers(), gb = graphed.model->named_buffers();
  for (std::size_t i = 0; i < ab.size(); ++i)
    EXPECT_TRUE(all_close(gb[i].second.to(Device::cpu()), ab[i].second.to(Device::cpu()), 0, 0))
        << ab[i].first;
  set_deterministic_convolutions(was_deterministic);
}

}  // namespace
}  // namespace rg
