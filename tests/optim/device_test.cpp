// A cuda parameter or gradient is refused with a clear error until the CUDA kernels arrive.
// Needs a GPU to make a cuda tensor; skips elsewhere.

#include <gtest/gtest.h>

#include "core/device.h"
#include "optim/optim.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

// Host memory labelled cuda:0 (never read: the optimizers must refuse it first).
Tensor labelled_cuda(std::vector<float>& buffer) {
  return from_blob(buffer.data(), {2, 3}, {.device = Device::cuda()});
}

TEST(OptimDevice, CudaTensorsAreRefusedClearly) {
  std::vector<float> pb(6), gb(6);
  Tensor p = labelled_cuda(pb);
  p.set_requires_grad(true);
  p.set_grad(labelled_cuda(gb));
  SGD sgd({p}, {.lr = 0.1});
  EXPECT_TRUE(throws_error([&] { sgd.step(); }, {"SGD", "no CUDA kernel yet", "[2, 3] f32 cuda"}));
  AdamW adamw({p}, {});
  EXPECT_TRUE(throws_error([&] { adamw.step(); }, {"AdamW", "no CUDA kernel yet"}));
  EXPECT_TRUE(throws_error([&] { clip_grad_norm({p}, 1.0); },
                           {"clip_grad_norm", "no CUDA kernel yet", "[2, 3] f32 cuda"}));
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
