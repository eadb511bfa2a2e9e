#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/config.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Silu, Gradcheck) {
  auto fn = [](const std::vector<Tensor>& in) { return silu(in[0]); };
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3}, -2, 2)}));
  // A transposed (non-contiguous) input: the op must follow strides.
  auto transposed = [](const std::vector<Tensor>& in) { return silu(in[0].transpose(0, 1)); };
  EXPECT_TRUE(gradcheck(transposed, {grad_input({3, 2}, -2, 2, 3)}));
}

TEST(Silu, MatchesPyTorch) {
  Fixture f("silu");  // tests/fixtures/silu.safetensors, from tools/fixtures/silu.py
  for (std::string c : {"small", "wide"}) {
    SCOPED_TRACE(c);
    Tensor x = f[c + ".x"].set_requires_grad(true);
    Tensor y = silu(x);
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c + ".gx"]));
  }
}

// The fused op computes what its composition computes, forward and backward, in every dtype
// (within a few units in the last place: the composition rounds between its two kernels).
TEST(Silu, MatchesTheUnfusedComposition) {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor v = add(mul(rand({5, 37}, {DType::f64}), 12.0), -6.0).to(dtype);
    Tensor a = v.clone().set_requires_grad(true), b = v.clone().set_requires_grad(true);
    const Tensor fused = silu(a), unfused = mul(b, sigmoid(b));
    const double tol = dtype == DType::f64 ? 1e-14 : device_parity_tolerance(dtype);
    EXPECT_TRUE(all_close(fused, unfused, tol, tol));
    const Tensor gy = rand({5, 37}, {DType::f64}).to(dtype);
    fused.backward(gy);
    unfused.backward(gy);
    EXPECT_TRUE(all_close(a.grad(), b.grad(), tol, tol));
  }
}

TEST(Silu, ExtremeInputsStayFinite) {
  // σ never overflows, so the far left tail gives (−)0 — never NaN from −∞·0.
  Tensor x = from_vector<double>({-800, -50, 0, 50, 800}, {5}, {DType::f64});
  x.set_requires_grad(true);
  Tensor y = silu(x);
  std::vector<double> v = y.to_vector<double>();
  EXPECT_EQ(v[0], 0.0);
  EXPECT_NEAR(v[1], -50 * std::exp(-50.0), 1e-30);
  EXPECT_EQ(v[2], 0.0);
  EXPECT_EQ(v[3], 50.0);
  EXPECT_EQ(v[4], 800.0);
  y.backward(ones({5}, {DType::f64}));
  std::vector<double> g = x.grad().to_vector<double>();
  EXPECT_EQ(g[0], 0.0);
  EXPECT_EQ(g[2], 0.5);
  EXPECT_EQ(g[4], 1.0);
}

TEST(Silu, BadInput) {
  EXPECT_TRUE(throws_error([] { silu(ones({2}, {DType::i64})); }, {"silu", "[2] i64 cpu"}));
  EXPECT_TRUE(throws_error([] { silu(ones({2, 2}, {DType::u8})); }, {"silu", "[2, 2] u8 cpu"}));
}

// Without a GPU: a cuda:0 tensor (host memory labelled cuda:0, never read) is refused by name.
// With one, tests/gpu/ops_parity_test.cpp compares the op on the GPU with the CPU.
TEST(Silu, OnDevices) {
  std::vector<float> buffer(6);
  const Tensor g = from_blob(buffer.data(), {2, 3}, {DType::f32, Device::cuda(0)});
  if (!kWithCuda) {
    EXPECT_TRUE(throws_error([&] { silu(g); }, {"cuda:0", "no CUDA backend"}));
  } else if (cuda_device_count() == 0) {
    EXPECT_TRUE(throws_error([&] { silu(g); }, {"cuda:0", "no usable GPU"}));
  }
  // A logical cpu device runs the CPU kernel, and keeps the result there.
  const Tensor x = ones({2, 3}, {DType::f32, Device::cpu(1)});
  EXPECT_EQ(silu(x).device(), Device::cpu(1));
}

}  // namespace
}  // namespace rg
