// Where cuda tensors cannot be updated — a build without the CUDA backend, or a machine without
// a GPU — the step, the clipping and the loss scaler say so clearly. (With a GPU they run:
// tests/gpu/optim_step_test.cpp.)

#include <gtest/gtest.h>

#include "core/config.h"
#include "core/device.h"
#include "optim/optim.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

// Host memory labelled cuda:0 (never read: no kernel may run on it here).
Tensor labelled_cuda(std::vector<float>& buffer) {
  return from_blob(buffer.data(), {2, 3}, {.device = Device::cuda()});
}

TEST(OptimDevice, CudaTensorsWithoutAGpuAreRefusedClearly) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is here: the gpu tests run the steps";
  // What this build says about cuda:0 on a machine without a GPU.
  const std::string why = kWithCuda ? "no usable GPU" : "no CUDA backend";
  std::vector<float> pb(6), gb(6);
  Tensor p = labelled_cuda(pb);
  p.set_requires_grad(true);
  p.set_grad(labelled_cuda(gb));
  SGD sgd({p}, {.lr = 0.1});
  EXPECT_TRUE(throws_error([&] { sgd.step(); }, {"cuda:0", why}));
  AdamW adamw({p}, {});
  EXPECT_TRUE(throws_error([&] { adamw.step(); }, {"cuda:0", why}));
  EXPECT_TRUE(throws_error([&] { clip_grad_norm({p}, 1.0); }, {"cuda:0", why}));
  LossScaler scaler;
  EXPECT_TRUE(throws_error([&] { scaler.unscale(sgd); }, {"cuda:0", why}));
}

TEST(OptimDevice, ClipGradNormWantsOneDevice) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is here: the gpu tests run the steps";
  std::vector<float> gb(6);
  Tensor p = ones({2, 3});
  p.set_requires_grad(true);
  p.set_grad(ones({2, 3}));
  Tensor q = labelled_cuda(gb);
  q.set_requires_grad(true);
  q.set_grad(labelled_cuda(gb));
  EXPECT_TRUE(throws_error(
      [&] {
        clip_grad_norm({p, q}, 1.0);
      },
      {"clip_grad_norm", "one device", "cuda"}));
}

TEST(OptimDevice, StateLoadsOntoTheParametersDevice) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU on this machine";
  Tensor p = ones({2, 3}, {.device = Device::cuda()});
  p.set_requires_grad(true);
  Tensor q = ones({2, 3});
  q.set_requires_grad(true);
  q.set_grad(ones({2, 3}));
  SGD cpu_sgd({q}, {.lr = 0.1, .momentum = 0.9});
  cpu_sgd.step();
  SGD cuda_sgd({p}, {.lr = 0.1, .momentum = 0.9});
  cuda_sgd.load_state_dict(cpu_sgd.state_dict());
  EXPECT_TRUE(cuda_sgd.state_dict().tensors.at("optim.state.0.momentum_buffer").device() ==
              Device::cuda());
}

}  // namespace
}  // namespace rg
