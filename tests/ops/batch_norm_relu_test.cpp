#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

Tensor f64(const std::vector<double>& v) {
  return from_vector(v, {static_cast<int64_t>(v.size())}, {DType::f64});
}

// Random inputs put no normalised value within the finite difference's step (1e-6) of the
// relu's kink; the shifted biases make some channels mostly negative and some mostly positive.
TEST(BatchNormRelu, GradcheckTrain) {
  auto fn = [](const std::vector<Tensor>& in) {
    return batch_norm_relu(in[0], in[1], in[2], zeros({in[0].size(1)}, {DType::f64}),
                           ones({in[0].size(1)}, {DType::f64}), BatchNormMode::train);
  };
  EXPECT_TRUE(gradcheck(
      fn, {grad_input({2, 3, 2, 2}), grad_input({3}, 0.5, 1.5, 2), grad_input({3}, -1, 1, 3)}));
  EXPECT_TRUE(
      gradcheck(fn, {grad_input({4, 3}), grad_input({3}, 0.5, 1.5, 2), grad_input({3}, -1, 1, 3)}));
  auto plain = [](const std::vector<Tensor>& in) {
    return batch_norm_relu(in[0].transpose(0, 1), Tensor(), Tensor(), Tensor(), Tensor(),
                           BatchNormMode::train);
  };
  EXPECT_TRUE(gradcheck(plain, {grad_input({3, 2, 3})}));
}

TEST(BatchNormRelu, GradcheckEval) {
  const Tensor rm = f64({0.1, -0.2, 0.3}), rv = f64({0.5, 1.5, 0.8});
  auto affine = [&](const std::vector<Tensor>& in) {
    return batch_norm_relu(in[0], in[1], in[2], rm, rv, BatchNormMode::eval);
  };
  EXPECT_TRUE(gradcheck(
      affine, {grad_input({2, 3, 2, 2}), grad_input({3}, 0.5, 1.5, 2), grad_input({3}, -1, 1, 3)}));
}

TEST(BatchNormRelu, MatchesPyTorch) {
  Fixture f("batch_norm_relu");
  struct Case {
    const char* name;
    BatchNormMode mode;
    double momentum;
  };
  for (const Case& c :
       {Case{"train4d", BatchNormMode::train, 0.1}, Case{"train2d", BatchNormMode::train, 0.1},
        Case{"train_noaffine", BatchNormMode::train, 0.3},
        Case{"eval4d", BatchNormMode::eval, 0.1}}) {
    SCOPED_TRACE(c.name);
    const std::string p = std::string(c.name) + ".";
    const bool affine = f.has(p + "w");
    Tensor x = f[p + "x"].set_requires_grad(true);
    Tensor w = affine ? f[p + "w"].set_requires_grad(true) : Tensor();
    Tensor b = affine ? f[p + "b"].set_requires_grad(true) : Tensor();
    Tensor rm = f[p + "running_mean_in"].clone(), rv = f[p + "running_var_in"].clone();
    Tensor y = batch_norm_relu(x, w, b, rm, rv, c.mode, c.momentum, 1e-5);
    EXPECT_TRUE(all_close(y, f[p + "y"]));
    EXPECT_TRUE(all_close(rm, f[p + "running_mean"]));
    EXPECT_TRUE(all_close(rv, f[p + "running_var"]));
    y.backward(f[p + "gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[p + "gx"]));
    if (affine) {
      EXPECT_TRUE(all_close(w.grad(), f[p + "gw"]));
      EXPECT_TRUE(all_close(b.grad(), f[p + "gb"]));
    }
  }
}

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

TEST(BatchNormRelu, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        batch_norm_relu(ones({4}), Tensor(), Tensor(), Tensor(), Tensor(), BatchNormMode::train);
      },
      {"batch_norm_relu", "(N, C, *)", "[4] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        batch_norm_relu(ones({4, 3}), ones({2}), Tensor(), Tensor(), Tensor(),
                        BatchNormMode::train);
      },
      {"batch_norm_relu", "weight", "[3]", "[2] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        batch_norm_relu(ones({1, 3}), Tensor(), Tensor(), Tensor(), Tensor(), BatchNormMode::train);
      },
      {"batch_norm_relu", "more than 1 value per channel", "[1, 3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        batch_norm_relu(ones({2, 3}), Tensor(), Tensor(), Tensor(), Tensor(), BatchNormMode::eval);
      },
      {"batch_norm_relu", "eval mode needs running_mean", "[2, 3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        batch_norm_relu(ones({2, 3}, {DType::i64}), Tensor(), Tensor(), Tensor(), Tensor(),
                        BatchNormMode::train);
      },
      {"batch_norm_relu", "[2, 3] i64 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        batch_norm_relu(ones({2, 3}), ones({3}, {DType::f64}), Tensor(), Tensor(), Tensor(),
                        BatchNormMode::train);
      },
      {"batch_norm_relu", "dtype mismatch", "[2, 3] f32 cpu", "[3] f64 cpu"}));
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
