// dropout's GPU kernels (ops/dropout/dropout_kernels.cuh) through the emulator against the CPU
// kernels: the mask must equal the CPU's bit for bit for the same (seed, offset) — both call
// the host/device philox_uniform_f32 — and the scaled output and gradient match in every dtype.
#include <gtest/gtest.h>

#include <cstring>

#include "ops/dropout/dropout_kernels.cuh"
#include "ops/ops.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), static_cast<std::size_t>(a.numel())) == 0;
}

detail::DropoutDraw draw_for(uint64_t seed, uint64_t offset, double p) {
  detail::DropoutDraw d;
  d.seed = seed;
  d.offset = offset;
  d.threshold = static_cast<float>(p);
  d.scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  return d;
}

TEST(DropoutKernel, MaskEqualsTheCpuBitForBit) {
  // An odd length, longer than the emulated grid (so threads loop), several seeds and offsets
  // (the counter's high word), and the probabilities at both ends.
  const int64_t n = 1237;
  const Tensor x = rand({n}, {DType::f32});
  for (uint64_t seed : {0ull, 42ull, 0x9E3779B97F4A7C15ull})
    for (uint64_t offset : {0ull, 3ull, 1ull << 40})
      for (double p : {0.0, 0.1, 0.5, 1.0}) {
        const detail::DropoutDraw d = draw_for(seed, offset, p);
        const Tensor cpu_mask = empty({n}, {DType::u8}), gpu_mask = empty({n}, {DType::u8});
        const Tensor cpu_y = empty({n}), gpu_y = empty({n});
        detail::dropout_forward(OnCpu{}, x, d, cpu_mask, cpu_y);
        launch_dropout(x, d, gpu_mask, gpu_y, nullptr);
        EXPECT_TRUE(same_bytes(gpu_mask, cpu_mask))
            << "seed " << seed << " offset " << offset << " p " << p;
        EXPECT_TRUE(all_close(gpu_y, cpu_y, 0, 0)) << "seed " << seed << " p " << p;
      }
}

TEST(DropoutKernel, TheOpsMaskIsTheKernelsMask) {
  // The public op draws (seed, offset) from the generator: the kernel with that draw reproduces
  // the op's output exactly, so a GPU run of the op keeps exactly the same elements.
  const Tensor x = add(rand({3, 5, 7}, {DType::f32}), 1.0);  // no zeros: y = 0 only if dropped
  Generator generator(123);
  generator.next_offset();  // an offset other than 0
  const uint64_t offset = generator.state().offset;
  const Tensor y_op = dropout(x, 0.3, DropoutMode::train, generator);
  const Tensor mask = empty(x.shape(), {DType::u8}), y = empty(x.shape());
  launch_dropout(x, draw_for(123, offset, 0.3), mask, y, nullptr);
  EXPECT_TRUE(all_close(y, y_op, 0, 0));
}

TEST(DropoutKernel, ForwardAndBackwardMatchTheCpuInEveryDtype) {
  for (DType dtype : kFloatingDtypes) {
    const Tensor x = add(mul(rand({5, 67}, {DType::f64}), 4.0), -2.0).to(dtype);
    const detail::DropoutDraw d = draw_for(7, 2, 0.25);
    const Tensor cpu_mask = empty(x.shape(), {DType::u8}), gpu_mask = empty(x.shape(), {DType::u8});
    const Tensor cpu_y = empty(x.shape(), {dtype}), gpu_y = empty(x.shape(), {dtype});
    detail::dropout_forward(OnCpu{}, x, d, cpu_mask, cpu_y);
    launch_dropout(x, d, gpu_mask, gpu_y, nullptr);
    EXPECT_TRUE(same_bytes(gpu_mask, cpu_mask)) << dtype;
    const double tol = device_parity_tolerance(dtype);
    EXPECT_TRUE(all_close(gpu_y, cpu_y, tol, tol)) << dtype;

    const Tensor gy = add(rand(x.shape(), {DType::f64}), -0.5).to(dtype);
    const Tensor cpu_gx = empty(x.shape(), {dtype}), gpu_gx = empty(x.shape(), {dtype});
    detail::dropout_backward(OnCpu{}, gy, cpu_mask, d.scale, cpu_gx);
    launch_dropout_backward(gy, gpu_mask, d.scale, gpu_gx, nullptr);
    EXPECT_TRUE(all_close(gpu_gx, cpu_gx, tol, tol)) << "backward " << dtype;
  }
  launch_dropout(empty({0}), draw_for(1, 0, 0.5), empty({0}, {DType::u8}), empty({0}), nullptr);
}

}  // namespace
}  // namespace rg
