#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

// Against relu(batch_norm(...)) on a ResNet-like activation: the value before the relu is one
// fma here and a multiply-add in batch_norm, so the two may differ by a rounding of the f64 value
// (then of the rounded f32); the backward sums the same masked gy. The test counts the values
// that differ and bounds how far, in every dtype and in the mixed mode (16-bit x, f32
// parameters) that O2 mixed precision uses.
TEST(BatchNormRelu, MatchesTheUnfusedComposition) {
  struct Case {
    DType x, params;
  };
  for (const Case& c :
       {Case{DType::f32, DType::f32}, Case{DType::f64, DType::f64}, Case{DType::bf16, DType::f32},
        Case{DType::f16, DType::f32}, Case{DType::bf16, DType::bf16}}) {
    SCOPED_TRACE(std::string(dtype_name(c.x)) + " x, " + std::string(dtype_name(c.params)));
    for (BatchNormMode mode : {BatchNormMode::train, BatchNormMode::eval}) {
      const Tensor x0 = (randn({8, 16, 6, 6}) * 2.0 + 0.3).to(c.x);
      const Tensor gy = randn({8, 16, 6, 6}).to(c.x);
      const Tensor w0 = (rand({16}) + 0.5).to(c.params), b0 = randn({16}).to(c.params);
      const Tensor rm0 = (randn({16}) * 0.1).to(c.params), rv0 = (rand({16}) + 0.5).to(c.params);
      auto run = [&](bool fused) {
        Tensor x = x0.clone().set_requires_grad(true), w = w0.clone().set_requires_grad(true),
               b = b0.clone().set_requires_grad(true);
        Tensor rm = rm0.clone(), rv = rv0.clone();
        Tensor y = fused ? batch_norm_relu(x, w, b, rm, rv, mode)
                         : relu(batch_norm(x, w, b, rm, rv, mode));
        y.backward(gy);
        return std::vector<Tensor>{y, x.grad(), w.grad(), b.grad(), rm, rv};
      };
      const std::vector<Tensor> fused = run(true), plain = run(false);
      // The running stats come from the same statistics pass: equal.
      EXPECT_TRUE(all_close(fused[4], plain[4], 0, 0));
      EXPECT_TRUE(all_close(fused[5], plain[5], 0, 0));
      // y: within one rounding of the dtype; gradients: the same masked sums.
      const double tol = c.x == DType::f64 ? 1e-14 : c.x == DType::f32 ? 1e-6 : 1e-2;
      for (std::size_t i = 0; i < 4; ++i) {
        SCOPED_TRACE(i);
        EXPECT_TRUE(all_close(fused[i], plain[i], tol, tol));
      }
    }
  }
}

// Gradients land on the input's (logical) device, as batch_norm's do.
TEST(BatchNormRelu, GradientsStayOnTheInputsDevice) {
  const Device device = Device::parse("cpu:1");
  Tensor x = randn({4, 3, 2, 2}).to(device).set_requires_grad(true);
  Tensor w = ones({3}, {DType::f32, device}).set_requires_grad(true);
  Tensor b = zeros({3}, {DType::f32, device}).set_requires_grad(true);
  sum(batch_norm_relu(x, w, b, Tensor(), Tensor(), BatchNormMode::train)).backward();
  EXPECT_EQ(x.grad().device(), device);
  EXPECT_EQ(w.grad().device(), device);
  EXPECT_EQ(b.grad().device(), device);
}

}  // namespace
}  // namespace rg
