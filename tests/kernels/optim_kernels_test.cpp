// The training step's fused multi-tensor kernels (optim/optim_kernels.cuh) run through the
// emulator against the CPU loops (optim/update_cpu.cpp): SGD and AdamW in every option, the
// loss scaler's unscale-and-check with inf and NaN, gradient norms and clipping, airbench94's
// Lookahead. Each launch
// holds several tensors of odd sizes (cut into several chunks, with ragged ends) and of all four
// floating dtypes at once. Updates and unscaling share their per-element math with the CPU:
// bit-identical. Norms are sums in another order: 1e-12 relative.
//
// This file is compiled with -ffp-contract=off (tests/CMakeLists.txt), as optim/ is: a fused
// multiply-add would round differently from the CPU loops it is compared with.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/launch_counts.h"
#include "ops/ops.h"
#include "optim/optim_kernels.cuh"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

// Sizes below, at and above a chunk (multi_tensor::kChunk = 77 emulated) and a block (64).
const int64_t kSizes[] = {1, 77, 200, 13};

Tensor values(int64_t n, DType dtype, double lo, double hi) {
  return add(mul(rand({n}, {DType::f64}), hi - lo), lo).to(dtype);
}

// Same dtype, shape and bytes (NaN payloads included).
::testing::AssertionResult same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    return ::testing::AssertionFailure() << a.describe() << " vs " << b.describe();
  if (std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) != 0)
    return ::testing::AssertionFailure()
           << a.describe()
           << " differs: " << all_close(a.to(DType::f64), b.to(DType::f64), 0, 0).message();
  return ::testing::AssertionSuccess();
}

// Tensor i of the launch: size kSizes[i % 4], dtype kFloatingDtypes[i % 4] rotated by `shift`.
DType dtype_of(std::size_t i, std::size_t shift) {
  return kFloatingDtypes[(i + shift) % kFloatingDtypes.size()];
}

struct SgdCase {
  double momentum, dampening, weight_decay;
  bool nesterov, first;
};

TEST(OptimKernels, SgdMatchesTheCpuBitForBit) {
  const SgdCase cases[] = {{0, 0, 0, false, false},     {0, 0, 1e-2, false, false},
                           {0.9, 0, 0, false, true},    {0.9, 0.1, 5e-4, false, false},
                           {0.9, 0, 5e-4, true, false}, {0.9, 0, 5e-4, true, true}};
  for (std::size_t shift = 0; shift < kFloatingDtypes.size(); ++shift)
    for (const SgdCase& c : cases) {
      std::vector<detail::SgdItem> cpu, emulated;
      for (std::size_t i = 0; i < 4; ++i) {
        const int64_t n = kSizes[i];
        const DType dtype = dtype_of(i, shift);
        const detail::SgdScalars s{0.1,        c.weight_decay,  c.momentum, c.dampening,
                                   c.nesterov, c.momentum != 0, c.first};
        const Tensor p = values(n, dtype, -1, 1), g = values(n, dtype, -2, 2);
        const Tensor b = c.momentum != 0 ? values(n, dtype, -1, 1) : Tensor();
        cpu.push_back({p.clone(), g, b.defined() ? b.clone() : b, int64_t(i), s});
        emulated.push_back({p.clone(), g, b.defined() ? b.clone() : b, int64_t(i), s});
      }
      detail::sgd_step(OnCpu{}, cpu);
      launch_sgd(emulated, nullptr);
      for (std::size_t i = 0; i < cpu.size(); ++i) {
        EXPECT_TRUE(same_bits(emulated[i].param, cpu[i].param))
            << "param " << i << " momentum " << c.momentum << " nesterov " << c.nesterov;
        if (c.momentum != 0) {
          EXPECT_TRUE(same_bits(emulated[i].buffer, cpu[i].buffer));
        }
      }
    }
}

// A rate kept in memory (Optimizer::keep_lr_on_device, for CUDA graph replays) is read when the
// update runs, in place of the host value: the same items stepped again after the rate changed
// use the new one, bit for bit as host rates of 0.1 then 0.025 would.
TEST(OptimKernels, SgdReadsTheRateFromMemoryWhenItRuns) {
  double rate = 0.1;
  std::vector<detail::SgdItem> host, cpu_in_memory, emulated;
  for (std::size_t i = 0; i < 4; ++i) {
    const int64_t n = kSizes[i];
    const DType dtype = dtype_of(i, 0);
    const detail::SgdScalars by_value{0.1, 5e-4, 0.9, 0, true, true, false};
    detail::SgdScalars by_address = by_value;
    by_address.lr = 99;  // ignored: the update reads `rate`
    by_address.lr_at = &rate;
    const Tensor p = values(n, dtype, -1, 1), g = values(n, dtype, -2, 2);
    const Tensor b = values(n, dtype, -1, 1);
    host.push_back({p.clone(), g, b.clone(), int64_t(i), by_value});
    cpu_in_memory.push_back({p.clone(), g, b.clone(), int64_t(i), by_address});
    emulated.push_back({p.clone(), g, b.clone(), int64_t(i), by_address});
  }
  for (const double next : {0.1, 0.025}) {
    rate = next;
    for (auto& it : host) it.scalars.lr = next;
    detail::sgd_step(OnCpu{}, host);
    detail::sgd_step(OnCpu{}, cpu_in_memory);
    launch_sgd(emulated, nullptr);
    for (std::size_t i = 0; i < host.size(); ++i) {
      EXPECT_TRUE(same_bits(emulated[i].param, host[i].param)) << "rate " << next << " " << i;
      EXPECT_TRUE(same_bits(cpu_in_memory[i].param, host[i].param)) << "rate " << next << " " << i;
      EXPECT_TRUE(same_bits(emulated[i].buffer, host[i].buffer)) << "rate " << next << " " << i;
    }
  }
}

struct AdamWCase {
  double beta1, weight_decay;
  bool amsgrad;
};

TEST(OptimKernels, AdamWMatchesTheCpuBitForBit) {
  // β1 = 0.9: torch.lerp's small-weight branch; β1 = 0.2: its other end.
  const AdamWCase cases[] = {{0.9, 0, false}, {0.9, 1e-2, false}, {0.2, 1e-2, true}};
  for (std::size_t shift = 0; shift < kFloatingDtypes.size(); shift += 2)
    for (const AdamWCase& c : cases) {
      std::vector<detail::AdamWItem> cpu, emulated;
      for (std::size_t i = 0; i < 4; ++i) {
        const int64_t n = kSizes[i];
        const DType dtype = dtype_of(i, shift);
        const int64_t t = 1 + static_cast<int64_t>(i);  // parameters at different steps
        const double beta2 = 0.999;
        const detail::AdamWScalars s{1e-3,
                                     c.weight_decay,
                                     c.beta1,
                                     beta2,
                                     1e-8,
                                     1e-3 / (1 - std::pow(c.beta1, double(t))),
                                     std::sqrt(1 - std::pow(beta2, double(t))),
                                     c.amsgrad};
        const Tensor p = values(n, dtype, -1, 1), g = values(n, dtype, -2, 2);
        const Tensor m = values(n, dtype, -0.1, 0.1), v = values(n, dtype, 0, 0.01);
        const Tensor x = c.amsgrad ? values(n, dtype, 0, 0.02) : Tensor();
        auto copy = [](const Tensor& t) { return t.defined() ? t.clone() : t; };
        cpu.push_back({p.clone(), g, m.clone(), v.clone(), copy(x), int64_t(i), s});
        emulated.push_back({p.clone(), g, m.clone(), v.clone(), copy(x), int64_t(i), s});
      }
      detail::adamw_step(OnCpu{}, cpu);
      launch_adamw(emulated, nullptr);
      for (std::size_t i = 0; i < cpu.size(); ++i) {
        EXPECT_TRUE(same_bits(emulated[i].param, cpu[i].param)) << "param " << i;
        EXPECT_TRUE(same_bits(emulated[i].exp_avg, cpu[i].exp_avg));
        EXPECT_TRUE(same_bits(emulated[i].exp_avg_sq, cpu[i].exp_avg_sq));
        if (c.amsgrad) {
          EXPECT_TRUE(same_bits(emulated[i].max_exp_avg_sq, cpu[i].max_exp_avg_sq));
        }
      }
    }
}

// Unscales gradients of every dtype; `poison` puts inf or NaN at (tensor, element) pairs.
void check_unscale(const std::vector<std::pair<std::size_t, int64_t>>& poison, double bad_value,
                   int64_t expected_first) {
  std::vector<Tensor> cpu, emulated;
  std::vector<int64_t> indices;
  for (std::size_t i = 0; i < 4; ++i) {
    Tensor g = values(kSizes[i], DType::f64, -6e4, 6e4);  // within f16's range
    for (auto [t, k] : poison)
      if (t == i) g.data<double>()[k] = bad_value;
    g = g.to(dtype_of(i, 1));
    cpu.push_back(g.clone());
    emulated.push_back(g.clone());
    indices.push_back(10 + static_cast<int64_t>(i));  // list positions need not be 0..n-1
  }
  const double inv = 1.0 / 65536.0 * 3;  // not a power of two: the product rounds
  const int64_t cpu_first = detail::unscale_grads(OnCpu{}, cpu, indices, inv);
  const Tensor flag = full({1}, 1e6, {DType::i64});
  launch_unscale(emulated, indices, inv, flag, nullptr);
  const int64_t raw = flag.data<int64_t>()[0];
  const int64_t emulated_first = raw == 1000000 ? -1 : raw;
  EXPECT_EQ(cpu_first, expected_first);
  EXPECT_EQ(emulated_first, expected_first);
  for (std::size_t i = 0; i < cpu.size(); ++i) EXPECT_TRUE(same_bits(emulated[i], cpu[i])) << i;
}

// Lookahead's update, averages and tensors, one launch over tensors of every dtype and size; the
// decays of airbench94's schedule, 0 (the average becomes the tensor) and 1 (its last call).
TEST(OptimKernels, LookaheadMatchesTheCpuBitForBit) {
  for (double decay : {0.0, 0.3, 0.7737809375, 1.0})
    for (std::size_t shift = 0; shift < kFloatingDtypes.size(); ++shift) {
      std::vector<detail::LookaheadItem> cpu, emulated;
      for (std::size_t i = 0; i < 4; ++i) {
        const Tensor t = values(kSizes[i], dtype_of(i, shift), -1, 1);
        const Tensor a = values(kSizes[i], dtype_of(i, shift), -1, 1);
        cpu.push_back({t.clone(), a.clone()});
        emulated.push_back({t.clone(), a.clone()});
      }
      detail::lookahead_update(OnCpu{}, cpu, decay);
      launch_lookahead(emulated, decay, nullptr);
      for (std::size_t i = 0; i < cpu.size(); ++i) {
        EXPECT_TRUE(same_bits(emulated[i].average, cpu[i].average)) << i << " decay " << decay;
        EXPECT_TRUE(same_bits(emulated[i].tensor, cpu[i].tensor)) << i << " decay " << decay;
        EXPECT_TRUE(same_bits(cpu[i].tensor, cpu[i].average)) << i;  // the tensor reset to it
      }
    }
}

// airbench94's 33 tensors (21 parameters, 12 BatchNorm statistics) in one launch, where the
// per-tensor ops took 5 each. Emulated, the chunk table stays in host memory: no copy counted
// (on a GPU, one host-to-device copy of it).
TEST(OptimKernels, LookaheadIsOneLaunch) {
  std::vector<detail::LookaheadItem> items;
  for (int64_t i = 0; i < 33; ++i)
    items.push_back(
        {values(kSizes[i % 4], DType::f32, -1, 1), values(kSizes[i % 4], DType::f32, -1, 1)});
  const LaunchCounts before = launch_counts();
  launch_lookahead(items, 0.5, nullptr);
  const LaunchCounts launched = launch_counts() - before;
  EXPECT_EQ(launched.kernels, 1);
  EXPECT_EQ(launched.library_calls, 0);
  EXPECT_EQ(launched.copies, 0);
}

TEST(OptimKernels, UnscaleAndFoundInfMatchTheCpu) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  check_unscale({}, 0, -1);
  check_unscale({{2, 199}}, inf, 12);         // the last element of the largest tensor
  check_unscale({{3, 0}, {1, 40}}, nan, 11);  // the first bad tensor in list order wins
  check_unscale({{0, 0}, {2, 100}}, -inf, 10);
}

TEST(OptimKernels, GradNormAndClippingMatchTheCpu) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double p : {2.0, 1.0, 3.0, inf})
    for (double max_norm : {0.5, 1e9}) {  // clips, and does not
      std::vector<Tensor> cpu, emulated;
      for (std::size_t i = 0; i < 4; ++i) {
        const Tensor g = values(kSizes[i], dtype_of(i, 2), -1, 1);
        cpu.push_back(g.clone());
        emulated.push_back(g.clone());
      }
      const Device cpu_device = Device::cpu();
      const detail::NormAndCoef expected =
          detail::total_norm(OnCpu{}, cpu, cpu_device, p, max_norm);
      detail::scale_grads(OnCpu{}, cpu, expected.coef);
      const Tensor norm = empty({}, {DType::f64}), coef = empty({}, {DType::f64});
      launch_total_norm(emulated, cpu_device, p, norm, max_norm, coef, nullptr);
      EXPECT_NEAR(norm.item(), expected.norm.item(), 1e-12 * expected.norm.item()) << "p " << p;
      EXPECT_NEAR(coef.item(), expected.coef.item(), 1e-12) << "p " << p;
      EXPECT_EQ(coef.item() < 1, max_norm == 0.5);
      // Scaled by the emulated coefficient: the CPU's loop with that coefficient, bit for bit.
      std::vector<Tensor> reference;
      for (std::size_t i = 0; i < 4; ++i) reference.push_back(emulated[i].clone());
      launch_scale(emulated, coef, nullptr);
      detail::scale_grads(OnCpu{}, reference, coef);
      for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(same_bits(emulated[i], reference[i]));
    }
}

TEST(OptimKernels, NonFiniteNormLeavesGradientsAlone) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {inf, std::numeric_limits<double>::quiet_NaN()})
    for (double p : {2.0, inf}) {
      std::vector<Tensor> grads;
      for (std::size_t i = 0; i < 4; ++i) {
        Tensor g = values(kSizes[i], DType::f64, -1, 1);
        if (i == 2) g.data<double>()[150] = bad;
        grads.push_back(g.to(dtype_of(i, 0)));
      }
      std::vector<Tensor> before;
      for (const Tensor& g : grads) before.push_back(g.clone());
      const Tensor norm = empty({}, {DType::f64}), coef = empty({}, {DType::f64});
      launch_total_norm(grads, Device::cpu(), p, norm, 1.0, coef, nullptr);
      EXPECT_FALSE(std::isfinite(norm.item()));
      if (std::isnan(bad)) {
        EXPECT_TRUE(std::isnan(norm.item())) << "NaN must win, p " << p;
      }
      EXPECT_EQ(coef.item(), 1.0);
      launch_scale(grads, coef, nullptr);
      for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(same_bits(grads[i], before[i]));
    }
}

TEST(OptimKernels, EmptyListsAndZeroNorm) {
  const Tensor norm = empty({}, {DType::f64}), coef = empty({}, {DType::f64});
  launch_total_norm({}, Device::cpu(), 2.0, norm, 1.0, coef, nullptr);  // one finishing block
  EXPECT_EQ(norm.item(), 0.0);
  EXPECT_EQ(coef.item(), 1.0);
  launch_sgd({}, nullptr);
  launch_adamw({}, nullptr);
  launch_unscale({}, {}, 1.0, full({1}, 5, {DType::i64}), nullptr);
}

}  // namespace
}  // namespace rg
