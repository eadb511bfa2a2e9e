// Training on a real GPU against the CPU: a few steps of a small ResNet in f32 and at every
// mixed-precision level (the same MixedPrecision policy and loss scaler run on both devices), and
// checkpoints written on one device that load on the other. The GPU tests skip where there is no
// GPU (label `gpu`; every kernel these steps launch is emulator-tested against the CPU in
// tests/kernels); the checkpoint test also runs between two logical CPU devices, everywhere.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/cuda/stream.h"
#include "core/rng.h"
#include "nn/models/zoo.h"
#include "ops/ops.h"
#include "optim/optim.h"
#include "tests/support/fixtures.h"
#include "tests/support/stream_gate.h"

namespace rg {
namespace {
using namespace rg::testing;

struct TrainedRun {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<MixedPrecision> amp;
  std::unique_ptr<SGD> optimizer;
  std::vector<double> losses;
  int64_t skipped = 0;
};

// Three SGD steps of resnet20 at a quarter width on one seeded batch, on `device`.
TrainedRun train_steps(const Device& device, const AmpOptions& options) {
  manual_seed(3);
  TrainedRun r;
  r.model = nn::make_model("resnet20@0.25");
  r.model->to(device);
  r.amp = std::make_unique<MixedPrecision>(*r.model, options);
  MixedPrecision& amp = *r.amp;
  r.optimizer = std::make_unique<SGD>(
      amp.optimizer_params(), SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4});
  SGD& opt = *r.optimizer;
  manual_seed(4);
  const Tensor x = randn({8, 3, 16, 16}).to(device);
  const Tensor labels =
      from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {8}, {DType::i64}).to(device);
  for (int step = 0; step < 3; ++step) {
    Tensor logits;
    {
      auto autocast = amp.autocast();
      logits = r.model->forward(amp.cast_input(x));
    }
    opt.zero_grad();
    const Tensor loss = cross_entropy(logits.to(DType::f32), labels);
    r.losses.push_back(loss.item());
    amp.backward(loss);
    amp.step(opt);
    amp.update();
  }
  r.skipped = amp.scaler() ? amp.scaler()->skipped_steps() : 0;
  return r;
}

std::vector<AmpOptions> amp_configs() {
  std::vector<AmpOptions> configs{{}};
  for (OptLevel level : {OptLevel::O1, OptLevel::O2, OptLevel::O3})
    for (DType dtype : {DType::f16, DType::bf16}) configs.push_back({level, dtype, {}});
  return configs;
}

TEST(GpuTraining, StepsAtEveryAmpLevelMatchTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  for (const AmpOptions& options : amp_configs()) {
    const std::string what =
        std::string(opt_level_name(options.level)) + " " +
        std::string(options.level == OptLevel::O0 ? "f32" : dtype_name(options.dtype));
    const TrainedRun cpu = train_steps(Device::cpu(), options);
    const TrainedRun gpu = train_steps(Device::cuda(0), options);
    // cuDNN and cuBLAS sum in other orders than the CPU's kernels: f32 agrees to rounding,
    // 16-bit to a few units of its last place, compounded over three steps.
    const double tol = options.level == OptLevel::O0 ? 1e-3 : 5e-2;
    for (std::size_t i = 0; i < cpu.losses.size(); ++i)
      EXPECT_NEAR(gpu.losses[i], cpu.losses[i], tol * (1 + std::abs(cpu.losses[i])))
          << what << " step " << i;
    EXPECT_EQ(gpu.skipped, cpu.skipped) << what;
    const auto cpu_params = cpu.model->named_parameters();
    const auto gpu_params = gpu.model->named_parameters();
    for (std::size_t i = 0; i < cpu_params.size(); ++i)
      EXPECT_TRUE(all_close(gpu_params[i].second.to(Device::cpu()).to(DType::f64),
                            cpu_params[i].second.to(DType::f64), tol, tol))
          << what << " " << cpu_params[i].first;
  }
}

// An f32 train step queues its work and returns while the GPU still runs it: nothing in the
// forward, the backward or the optimizer waits for the GPU (no read back, no synchronous copy).
// The mixed-precision levels are left out by design: their loss scaler reads its verdict once a
// step (as PyTorch's GradScaler does before SGD's step).
TEST(GpuTraining, AStepReturnsBeforeTheGpuRunsIt) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  manual_seed(3);
  auto model = nn::make_model("resnet20@0.25");
  model->to(Device::cuda(0));
  SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4});
  const Tensor x = randn({8, 3, 16, 16}).to(Device::cuda(0));
  const Tensor labels = arange(0, 8).to(DType::i64).to(Device::cuda(0));
  auto step = [&] {
    const Tensor logits = model->forward(x);
    opt.zero_grad();
    cross_entropy(logits, labels).backward();
    opt.step();
  };
  step();  // the first builds the cuDNN plans and the optimizer's buffers
  synchronize(Device::cuda(0));
  testing::StreamGate gate(cuda::current_stream(0));
  EXPECT_TRUE(gate.returns_while_closed(step)) << "the host waited for the GPU during a train step";
}

// A checkpoint holds host copies: written on one device it loads on another, with the
// optimizer's momentum and (O2) the f32 master weights, bit for bit.
void check_checkpoints_cross(const Device& other) {
  for (const AmpOptions& options : {AmpOptions{}, AmpOptions{OptLevel::O2, DType::f16, {}}}) {
    for (const bool from_other : {true, false}) {
      const Device source = from_other ? other : Device::cpu();
      const Device target = from_other ? Device::cpu() : other;
      const TrainedRun trained = train_steps(source, options);
      const std::string path = temp_path("cross_device.safetensors");
      TrainingState saved_state;
      saved_state.epoch = 1, saved_state.step = 3;
      save_checkpoint(path, *trained.model, trained.optimizer.get(), nullptr, saved_state,
                      trained.amp.get());

      manual_seed(11);  // other initial weights, so that loading must replace them
      auto model = nn::make_model("resnet20@0.25");
      model->to(target);
      MixedPrecision amp2(*model, options);
      SGD opt2(amp2.optimizer_params(), {.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4});
      const TrainingState state = load_checkpoint(path, *model, &opt2, nullptr, &amp2);
      EXPECT_EQ(state.step, 3);
      const std::string what = source.str() + " -> " + target.str();
      const auto want = trained.model->state_dict();
      for (const auto& [name, t] : model->state_dict()) {
        EXPECT_EQ(t.device(), target) << name;
        EXPECT_TRUE(all_close(t.to(Device::cpu()).to(DType::f64),
                              want.at(name).to(Device::cpu()).to(DType::f64), 0, 0))
            << name << " " << what;
      }
      // The momentum buffers came along, on the target device.
      const StateDict want_optim = trained.optimizer->state_dict();
      const StateDict got_optim = opt2.state_dict();
      ASSERT_EQ(got_optim.tensors.size(), want_optim.tensors.size());
      for (const auto& [name, t] : got_optim.tensors)
        EXPECT_TRUE(all_close(t.to(Device::cpu()).to(DType::f64),
                              want_optim.tensors.at(name).to(Device::cpu()).to(DType::f64), 0, 0))
            << name << " " << what;
    }
  }
}

TEST(GpuTraining, CheckpointsLoadOnTheOtherDevice) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  check_checkpoints_cross(Device::cuda(0));
}

// The same on a second logical CPU device, so that the device bookkeeping of saving and loading
// runs on every machine.
TEST(GpuTraining, CheckpointsLoadOnAnotherCpuDevice) {
  check_checkpoints_cross(Device::cpu(1));
}

}  // namespace
}  // namespace rg
