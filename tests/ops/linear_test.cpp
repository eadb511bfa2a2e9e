#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Linear, GradcheckWithAndWithoutBias) {
  auto with_bias = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  auto no_bias = [](const std::vector<Tensor>& in) { return linear(in[0], in[1]); };
  const Tensor x = grad_input({4, 3}), w = grad_input({2, 3}, -1, 1, 2),
               b = grad_input({2}, -1, 1, 3);
  EXPECT_TRUE(gradcheck(with_bias, {x, w, b}));
  EXPECT_TRUE(gradcheck(no_bias, {x, w}));
}

TEST(Linear, Gradcheck3dAnd1dInput) {
  auto fn = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  const Tensor w = grad_input({2, 3}, -1, 1, 2), b = grad_input({2}, -1, 1, 3);
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 2, 3}), w, b}));
  EXPECT_TRUE(gradcheck(fn, {grad_input({3}), w, b}));
}

TEST(Linear, GradcheckNonContiguousInputAndWeight) {
  auto fn = [](const std::vector<Tensor>& in) {
    return linear(in[0].transpose(0, 1), in[1].transpose(0, 1), in[2]);
  };
  EXPECT_TRUE(
      gradcheck(fn, {grad_input({3, 4}), grad_input({3, 2}, -1, 1, 2), grad_input({2}, -1, 1, 3)}));
}

TEST(Linear, OnlyRequestedGradients) {
  // A first layer: the input needs no gradient, so none is computed (and x is not an edge).
  Tensor x = rand({4, 3});
  Tensor w = rand({2, 3}).set_requires_grad(true);
  linear(x, w).backward(ones({4, 2}));
  EXPECT_TRUE(w.grad().defined());
  EXPECT_FALSE(x.grad().defined());
}

TEST(Linear, MatchesPyTorch) {
  Fixture f("linear");
  for (const char* name : {"bias", "nobias", "3d", "1d"}) {
    SCOPED_TRACE(name);
    const std::string p = std::string(name) + ".";
    const bool has_bias = f.has(p + "b");
    Tensor x = f[p + "x"].set_requires_grad(true), w = f[p + "w"].set_requires_grad(true);
    Tensor b = has_bias ? f[p + "b"].set_requires_grad(true) : Tensor();
    Tensor y = linear(x, w, b);
    EXPECT_TRUE(all_close(y, f[p + "y"]));
    y.backward(f[p + "gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[p + "gx"]));
    EXPECT_TRUE(all_close(w.grad(), f[p + "gw"]));
    if (has_bias) {
      EXPECT_TRUE(all_close(b.grad(), f[p + "gb"]));
    }
  }
}

TEST(Linear, LargeMatchesMatmul) {
  // Above the GEMM's parallel threshold: linear == x·wᵀ + b, forward and backward.
  Tensor x = rand({256, 96}, {DType::f64}).set_requires_grad(true);
  Tensor w = rand({120, 96}, {DType::f64}).set_requires_grad(true);
  Tensor b = rand({120}, {DType::f64}).set_requires_grad(true);
  const Tensor gy = rand({256, 120}, {DType::f64});
  Tensor y = linear(x, w, b);
  y.backward(gy);
  Tensor x2 = x.detach().set_requires_grad(true), w2 = w.detach().set_requires_grad(true);
  Tensor b2 = b.detach().set_requires_grad(true);
  Tensor y2 = matmul(x2, w2.transpose(0, 1)) + b2;
  y2.backward(gy);
  EXPECT_TRUE(all_close(y, y2, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(x.grad(), x2.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(w.grad(), w2.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(b.grad(), b2.grad(), 1e-12, 1e-12));
}

TEST(Linear, HalfPrecision) {
  const Tensor x = rand({4, 3}), w = rand({2, 3}), b = rand({2});
  const Tensor y = linear(x.to(DType::f16), w.to(DType::f16), b.to(DType::f16));
  EXPECT_EQ(y.dtype(), DType::f16);
  EXPECT_TRUE(all_close(y, linear(x, w, b), 0.01, 0.01));
}

TEST(Linear, BadShape) {
  EXPECT_TRUE(throws_error(
      [] {
        linear(ones({4, 3}), ones({2, 5}));
      },
      {"linear", "[4, 3] f32 cpu", "[2, 5] f32 cpu"}));
  EXPECT_TRUE(throws_error([] { linear(ones({4, 3}), ones({3})); }, {"linear", "2-D", "[3]"}));
  EXPECT_TRUE(throws_error(
      [] {
        linear(ones({4, 3}), ones({2, 3}), ones({3}));
      },
      {"linear", "bias", "[3] f32 cpu"}));
}

TEST(Linear, BadDtype) {
  EXPECT_TRUE(throws_error(
      [] {
        linear(ones({4, 3}, {DType::i64}), ones({2, 3}, {DType::i64}));
      },
      {"linear", "[4, 3] i64 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        linear(ones({4, 3}), ones({2, 3}), ones({2}, {DType::f64}));
      },
      {"linear", "dtype mismatch", "[2] f64 cpu"}));
}

}  // namespace
}  // namespace rg
