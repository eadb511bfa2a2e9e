#include <gtest/gtest.h>

#include <vector>

#include "core/config.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Gelu, Gradcheck) {
  auto fn = [](const std::vector<Tensor>& in) { return gelu(in[0]); };
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3}, -2, 2)}));
  // A transposed (non-contiguous) input: the op must follow strides.
  auto transposed = [](const std::vector<Tensor>& in) { return gelu(in[0].transpose(0, 1)); };
  EXPECT_TRUE(gradcheck(transposed, {grad_input({3, 2}, -2, 2, 3)}));
}

TEST(Gelu, MatchesPyTorch) {
  Fixture f("gelu");  // tests/fixtures/gelu.safetensors, from tools/fixtures/gelu.py
  for (std::string c : {"small", "wide"}) {
    SCOPED_TRACE(c);
    Tensor x = f[c + ".x"].set_requires_grad(true);
    Tensor y = gelu(x);
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[c + ".gx"]));
  }
}

// Far tails: Φ(x) = ½(1 + erf(x/√2)) rounds to exactly 0 below about −8.3 (f64), so gelu is −0
// there; φ(x) underflows to 0 below about −38.6, so from there the gradient is exactly 0, never
// NaN. Far above, gelu(x) = x and the gradient 1. 16-bit inputs compute in f32.
TEST(Gelu, TailsAndHalfPrecision) {
  const Tensor x = from_vector<double>({-800, -40, 0, 40, 800}, {5}, {DType::f64});
  EXPECT_TRUE(all_close(gelu(x), from_vector<double>({0, 0, 0, 40, 800}, {5}, {DType::f64}), 0, 0));
  Tensor xg = x.clone().set_requires_grad(true);
  gelu(xg).backward(ones({5}, {DType::f64}));
  EXPECT_TRUE(
      all_close(xg.grad(), from_vector<double>({0, 0, 0.5, 1, 1}, {5}, {DType::f64}), 0, 0));
  const Tensor h = from_vector<double>({-3, -0.5, 0.25, 2}, {4}, {DType::f64});
  for (DType dtype : {DType::f16, DType::bf16})
    EXPECT_TRUE(all_close(gelu(h.to(dtype)).to(DType::f64), gelu(h).to(dtype).to(DType::f64), 0, 0))
        << dtype;
}

TEST(Gelu, BadInput) {
  EXPECT_TRUE(throws_error([] { gelu(ones({2}, {DType::i64})); }, {"gelu", "[2] i64 cpu"}));
  EXPECT_TRUE(throws_error([] { gelu(ones({2, 2}, {DType::u8})); }, {"gelu", "[2, 2] u8 cpu"}));
}

// Without a GPU: a cuda:0 tensor (host memory labelled cuda:0, never read) is refused by name.
// With one, tests/gpu/ops_parity_test.cpp compares the op on the GPU with the CPU.
TEST(Gelu, OnDevices) {
  std::vector<float> buffer(6);
  const Tensor g = from_blob(buffer.data(), {2, 3}, {DType::f32, Device::cuda(0)});
  if (!kWithCuda) {
    EXPECT_TRUE(throws_error([&] { gelu(g); }, {"cuda:0", "no CUDA backend"}));
  } else if (cuda_device_count() == 0) {
    EXPECT_TRUE(throws_error([&] { gelu(g); }, {"cuda:0", "no usable GPU"}));
  }
  // A logical cpu device runs the CPU kernel, and keeps the result there.
  const Tensor x = ones({2, 3}, {DType::f32, Device::cpu(1)});
  EXPECT_EQ(gelu(x).device(), Device::cpu(1));
}

}  // namespace
}  // namespace rg
