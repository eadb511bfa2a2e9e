// The training step on a real GPU against the CPU: SGD and AdamW (one fused launch per step),
// the loss scaler's unscale-and-check, and gradient clipping. f32 updates must be bit-identical
// (the same per-element math, no FMA contraction on either side); 16-bit ones too. Skips where
// there is no GPU (label `gpu`); tests/kernels/optim_kernels_test.cpp runs the same kernels
// through the emulator everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>

#include "ops/ops.h"
#include "optim/optim.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

const Shape kShapes[] = {{3, 5}, {70000}, {1}, {16, 3, 3, 3}};  // one spans two chunks

// Parameters with gradients, on `device`, from the same seeded values.
std::vector<Tensor> make_params(DType dtype, const Device& device, double grad_scale = 1) {
  manual_seed(7);
  std::vector<Tensor> params;
  for (const Shape& s : kShapes) {
    Tensor p = add(rand(s, {DType::f64}), -0.5).to(dtype).to(device).set_requires_grad(true);
    p.set_grad(mul(add(rand(s, {DType::f64}), -0.5), grad_scale).to(dtype).to(device));
    params.push_back(p);
  }
  return params;
}

::testing::AssertionResult same_values(const std::vector<Tensor>& gpu,
                                       const std::vector<Tensor>& cpu) {
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    auto r = all_close(gpu[i].to(Device::cpu()).to(DType::f64), cpu[i].to(DType::f64), 0, 0);
    if (!r) return r << " (parameter " << i << ")";
  }
  return ::testing::AssertionSuccess();
}

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;

void check_optimizer(const MakeOptimizer& make) {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    std::vector<Tensor> cpu = make_params(dtype, Device::cpu());
    std::vector<Tensor> gpu = make_params(dtype, Device::cuda(0));
    auto cpu_opt = make(cpu), gpu_opt = make(gpu);
    for (int step = 0; step < 3; ++step) {  // the first step (buffers start) and later ones
      cpu_opt->step();
      gpu_opt->step();
      EXPECT_TRUE(same_values(gpu, cpu)) << dtype << " step " << step;
    }
  }
}

TEST(GpuOptimStep, SgdMatchesTheCpuBitForBit) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  check_optimizer([](std::vector<Tensor> p) {
    return std::make_unique<SGD>(
        p, SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = Nesterov::on});
  });
  check_optimizer([](std::vector<Tensor> p) {
    return std::make_unique<SGD>(p, SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.1});
  });
}

TEST(GpuOptimStep, AdamWMatchesTheCpuBitForBit) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  check_optimizer([](std::vector<Tensor> p) {
    return std::make_unique<AdamW>(p, AdamWOptions{.lr = 1e-3, .weight_decay = 1e-2});
  });
  check_optimizer([](std::vector<Tensor> p) {
    return std::make_unique<AdamW>(p, AdamWOptions{.lr = 1e-3, .amsgrad = AmsGrad::on});
  });
}

TEST(GpuOptimStep, LossScalerFindsTheFirstOverflowOnTheDevice) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  for (bool overflow : {false, true}) {
    std::vector<Tensor> cpu = make_params(DType::f16, Device::cpu(), 4096);
    std::vector<Tensor> gpu = make_params(DType::f16, Device::cuda(0), 4096);
    if (overflow) {
      for (auto* params : {&cpu, &gpu}) {
        Tensor g = (*params)[3].grad().to(Device::cpu());
        g.data<Half>()[5] = Half(std::numeric_limits<float>::infinity());
        (*params)[3].set_grad(g.to((*params)[3].device()));
      }
    }
    SGD cpu_opt(cpu, {.lr = 0.1}), gpu_opt(gpu, {.lr = 0.1});
    LossScaler cpu_scaler, gpu_scaler;
    EXPECT_EQ(cpu_scaler.step(cpu_opt), !overflow);
    EXPECT_EQ(gpu_scaler.step(gpu_opt), !overflow);
    EXPECT_TRUE(same_values(gpu, cpu));
    ASSERT_EQ(gpu_scaler.last_overflow().has_value(), overflow);
    if (overflow) {
      EXPECT_EQ(gpu_scaler.last_overflow()->param_index, 3u);
    }
  }
}

TEST(GpuOptimStep, ClipGradNormMatchesTheCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  for (double p : {2.0, 1.0, kInfNorm}) {
    std::vector<Tensor> cpu = make_params(DType::f32, Device::cpu());
    std::vector<Tensor> gpu = make_params(DType::f32, Device::cuda(0));
    const double expected = clip_grad_norm(cpu, 0.5, p);
    const Tensor norm = clip_grad_norm_tensor(gpu, 0.5, p);
    EXPECT_TRUE(norm.device().is_cuda());
    EXPECT_NEAR(norm.item(), expected, 1e-12 * expected) << "p " << p;
    std::vector<Tensor> gg, cg;
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      gg.push_back(gpu[i].grad());
      cg.push_back(cpu[i].grad());
    }
    // The coefficients agree to rounding of the norm: within a unit or two of f32.
    for (std::size_t i = 0; i < cg.size(); ++i)
      EXPECT_TRUE(all_close(gg[i].to(Device::cpu()), cg[i], 1e-7, 1e-6)) << "p " << p;
  }
}

}  // namespace
}  // namespace rg
