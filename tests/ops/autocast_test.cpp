// The autocast policy (ops/autocast): under a guard each op runs in the dtype its policy names,
// outside it nothing changes; BatchNorm's mixed mode; the ResNet residual in 16 bits.
#include <gtest/gtest.h>

#include "core/autocast.h"
#include "core/autograd.h"
#include "ops/conv/conv2d/conv2d_kernel.h"
#include "ops/ops.h"
#include "tests/ops/bf16_tiles_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

class AutocastOps : public ::testing::TestWithParam<DType> {};

TEST_P(AutocastOps, EachOpRunsInTheDtypeThePolicyNames) {
  const DType half = GetParam();
  const Tensor x = randn({2, 3, 6, 6});
  const Tensor w = randn({4, 3, 3, 3}).set_requires_grad(true);
  const Tensor b = randn({4}).set_requires_grad(true);
  const Tensor lw = randn({5, 8}).set_requires_grad(true);
  const Tensor target = from_vector<int64_t>({1, 4}, {2}, {DType::i64});
  AutocastGuard autocast(half);
  // lower precision: f32 inputs (and weights) become the autocast dtype — for conv2d in bf16 on
  // the CPU unless its f32 kernels are the faster there (conv2d_bf16_rule_test.cpp).
  const bool f32_conv =
      half == DType::bf16 && conv2d_bf16_autocast_keeps_f32(x.shape(), w.shape(), {{1, 1}, {1, 1}});
  EXPECT_EQ(conv2d(x, w, b, {1, 1}, {1, 1}).dtype(), f32_conv ? DType::f32 : half);
  EXPECT_EQ(conv_transpose2d(x, randn({3, 2, 3, 3}), Tensor()).dtype(), half);
  EXPECT_EQ(linear(randn({2, 8}), lw, Tensor()).dtype(), half);
  EXPECT_EQ(matmul(randn({2, 8}), randn({8, 3})).dtype(), half);
  // f64 is left alone: a double computation was asked for explicitly.
  EXPECT_EQ(matmul(randn({2, 8}, {DType::f64}), randn({8, 3}, {DType::f64})).dtype(), DType::f64);
  // float32: 16-bit inputs are computed in f32 and give f32.
  const Tensor h = randn({2, 5}).to(half);
  EXPECT_EQ(softmax(h, 1).dtype(), DType::f32);
  EXPECT_EQ(log_softmax(h, 1).dtype(), DType::f32);
  EXPECT_EQ(cross_entropy(h, target).dtype(), DType::f32);
  EXPECT_EQ(nll_loss(h, target).dtype(), DType::f32);
  EXPECT_EQ(mse_loss(h, zeros({2, 5}).to(half)).dtype(), DType::f32);
  EXPECT_EQ(binary_cross_entropy_with_logits(h, zeros({2, 5})).dtype(), DType::f32);
  EXPECT_EQ(sum(h).dtype(), DType::f32);
  EXPECT_EQ(mean(h, {1}).dtype(), DType::f32);
  // promote: the wider operand wins; f16 with bf16 meet at f32.
  EXPECT_EQ((h + randn({2, 5})).dtype(), DType::f32);
  EXPECT_EQ((h * h).dtype(), half);
  const DType other = half == DType::f16 ? DType::bf16 : DType::f16;
  EXPECT_EQ((h - randn({2, 5}).to(other)).dtype(), DType::f32);
  EXPECT_EQ((h / randn({2, 5}, {DType::f64})).dtype(), DType::f64);
  // Not listed: runs in the input's dtype.
  EXPECT_EQ(relu(h).dtype(), half);
}

TEST_P(AutocastOps, OutsideAGuardNothingChanges) {
  const DType half = GetParam();
  EXPECT_EQ(linear(randn({2, 8}), randn({5, 8}), Tensor()).dtype(), DType::f32);
  EXPECT_EQ(softmax(randn({2, 5}).to(half), 1).dtype(), half);
  // Mixed dtypes stay an error outside autocast: no silent conversion in a plain program.
  EXPECT_TRUE(throws_error([&] { add(ones({2}, {half}), ones({2})); }, {"add", "dtype mismatch"}));
  {
    AutocastGuard off(std::nullopt);  // an explicit "off" guard
    EXPECT_EQ(matmul(randn({2, 8}), randn({8, 3})).dtype(), DType::f32);
  }
}

TEST_P(AutocastOps, GradientsReachTheF32WeightsInF32) {
  const DType half = GetParam();
  Bf16KernelsScope in_16_bits(Bf16ConvKernels::tiles);  // the 16-bit path on any machine
  const Tensor x = randn({2, 3, 5, 5});
  const Tensor w = randn({4, 3, 3, 3}).set_requires_grad(true);
  Tensor loss;
  {
    AutocastGuard autocast(half);
    loss = sum(conv2d(x, w, Tensor(), {1, 1}, {1, 1}));
  }
  EXPECT_EQ(loss.dtype(), DType::f32);
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), DType::f32);
  // d sum(conv(x, w)) / dw = the window sums of x: computed from the 16-bit x, rounded to 16
  // bits once (one rounding of an f32 result; see half_kernels_test.cpp for the bound).
  Tensor ref_w = w.detach().to(half).to(DType::f32).set_requires_grad(true);
  sum(conv2d(x.to(half).to(DType::f32), ref_w, Tensor(), {1, 1}, {1, 1})).backward();
  const double u = half == DType::f16 ? 1.0 / 2048 : 1.0 / 256;
  EXPECT_TRUE(all_close(w.grad(), ref_w.grad(), 1e-6, u));
}

TEST_P(AutocastOps, BatchNormTakesA16BitInputWithF32Parameters) {
  const DType half = GetParam();
  const Tensor x32 = randn({4, 3, 5, 5}) * 3.0 + 1.0;
  const Tensor x = x32.to(half).set_requires_grad(true);
  const Tensor w = randn({3}).set_requires_grad(true), b = randn({3}).set_requires_grad(true);
  const Tensor rm = zeros({3}), rv = ones({3});
  Tensor y = batch_norm(x, w, b, rm, rv, BatchNormMode::train);
  EXPECT_EQ(y.dtype(), half);
  EXPECT_EQ(rm.dtype(), DType::f32);
  // The reference: the same values in f32 throughout.
  const Tensor xr = x.detach().to(DType::f32).set_requires_grad(true);
  const Tensor wr = w.detach().clone().set_requires_grad(true);
  const Tensor br = b.detach().clone().set_requires_grad(true);
  const Tensor rmr = zeros({3}), rvr = ones({3});
  Tensor yr = batch_norm(xr, wr, br, rmr, rvr, BatchNormMode::train);
  const double u = half == DType::f16 ? 1.0 / 2048 : 1.0 / 256;
  // y: the f64 statistics and the f32 elementwise pass, rounded once to 16 bits.
  EXPECT_TRUE(all_close(y.to(DType::f32), yr, 1e-6, u));
  EXPECT_TRUE(all_close(rm, rmr, 1e-6, 1e-6));  // running stats: same math, f32 storage
  EXPECT_TRUE(all_close(rv, rvr, 1e-6, 1e-6));
  const Tensor gy = randn(y.shape()).to(half);
  y.backward(gy);
  yr.backward(gy.to(DType::f32));
  EXPECT_EQ(x.grad().dtype(), half);
  EXPECT_EQ(w.grad().dtype(), DType::f32);  // parameter gradients in the parameters' dtype
  EXPECT_EQ(b.grad().dtype(), DType::f32);
  EXPECT_TRUE(all_close(w.grad(), wr.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(all_close(b.grad(), br.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(all_close(x.grad().to(DType::f32), xr.grad(), 1e-5, u));
  // Eval mode uses the f32 running stats with the 16-bit input as well.
  EXPECT_EQ(batch_norm(x.detach(), w, b, rm, rv, BatchNormMode::eval).dtype(), half);
}

TEST_P(AutocastOps, BatchNormRejectsOtherMixes) {
  const DType half = GetParam();
  // f32 input with 16-bit parameters: not a mixed mode anyone needs; an error.
  EXPECT_TRUE(throws_error(
      [&] {
        batch_norm(randn({2, 3, 2}), ones({3}, {half}), Tensor(), Tensor(), Tensor(),
                   BatchNormMode::train);
      },
      {"batch_norm", "dtype mismatch", "parameter [3]"}));
  // Parameters of different dtypes among themselves.
  EXPECT_TRUE(throws_error(
      [&] {
        batch_norm(randn({2, 3, 2}).to(half), ones({3}), ones({3}, {half}), Tensor(), Tensor(),
                   BatchNormMode::train);
      },
      {"batch_norm", "dtype mismatch"}));
  // f64 parameters with a 16-bit input: only f32 is the mixed partner.
  EXPECT_TRUE(throws_error(
      [&] {
        batch_norm(randn({2, 3, 2}).to(half), ones({3}, {DType::f64}), Tensor(), Tensor(), Tensor(),
                   BatchNormMode::train);
      },
      {"batch_norm", "or f32 for an f16/bf16 input"}));
}

TEST_P(AutocastOps, ResidualBlockRunsUnderAutocastAndIn16Bits) {
  const DType half = GetParam();
  Bf16KernelsScope in_16_bits(Bf16ConvKernels::tiles);  // the 16-bit path on any machine
  // relu(bn(conv(x)) + shortcut) with f32 weights under autocast (O1) ...
  const Tensor x = randn({2, 4, 6, 6});
  const Tensor w = (randn({4, 4, 3, 3}) * 0.2).set_requires_grad(true);
  const Tensor g = ones({4}).set_requires_grad(true), b = zeros({4}).set_requires_grad(true);
  Tensor loss;
  {
    AutocastGuard autocast(half);
    Tensor y = batch_norm(conv2d(x, w, Tensor(), {1, 1}, {1, 1}), g, b, Tensor(), Tensor(),
                          BatchNormMode::train);
    EXPECT_EQ(y.dtype(), half);
    Tensor out = relu(y + x);  // f32 shortcut: promoted to f32
    EXPECT_EQ(out.dtype(), DType::f32);
    loss = mean(out);
  }
  loss.backward();
  EXPECT_EQ(w.grad().dtype(), DType::f32);
  EXPECT_EQ(g.grad().dtype(), DType::f32);
  // ... and with 16-bit conv weights and f32 BatchNorm (O2), no autocast.
  const Tensor w16 = w.detach().to(half).set_requires_grad(true);
  const Tensor x16 = x.to(half);
  Tensor out = relu(batch_norm(conv2d(x16, w16, Tensor(), {1, 1}, {1, 1}), g, b, Tensor(), Tensor(),
                               BatchNormMode::train) +
                    x16);
  EXPECT_EQ(out.dtype(), half);
  sum(out).backward();
  EXPECT_EQ(w16.grad().dtype(), half);
}

INSTANTIATE_TEST_SUITE_P(F16AndBf16, AutocastOps, ::testing::Values(DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace rg
