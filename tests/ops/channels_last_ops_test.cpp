// The channels-last paths of BatchNorm (and batch_norm_relu) and max_pool2d on the CPU: the
// results stay channels-last and equal the NCHW path's, gradients come back channels-last and
// equal, f64 gradchecks through the NHWC path, and bad input named as for NCHW input. Their GPU
// kernels are checked against these through the emulator (tests/kernels/
// channels_last_kernels_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using testing::all_close;
using testing::throws_error;

constexpr MemoryFormat kCl = MemoryFormat::channels_last;

Tensor values(const Shape& shape, DType dtype, double scale = 1.0) {
  return mul(add(mul(rand(shape, {DType::f64}), 2.0), -1.0), scale).to(dtype);
}

enum class Act { none, relu };

Tensor norm(Act act, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm,
            const Tensor& rv, BatchNormMode mode) {
  return act == Act::relu ? batch_norm_relu(x, w, b, rm, rv, mode)
                          : batch_norm(x, w, b, rm, rv, mode);
}

TEST(ChannelsLastBatchNorm, MatchesTheNchwPathAndStaysChannelsLast) {
  for (DType dtype : {DType::f32, DType::f64})
    for (Act act : {Act::none, Act::relu})
      for (BatchNormMode mode : {BatchNormMode::train, BatchNormMode::eval}) {
        const std::string what = std::string(dtype_name(dtype)) +
                                 (act == Act::relu ? " relu" : "") +
                                 (mode == BatchNormMode::train ? " train" : " eval");
        const double tol = dtype == DType::f64 ? 1e-12 : 1e-5;
        const Shape shape{3, 5, 4, 6};
        const Tensor x = values(shape, dtype, 3.0);
        const Tensor w0 = add(values({5}, dtype), 1.5), b0 = values({5}, dtype);
        Tensor rm_a = values({5}, dtype, 0.1), rv_a = add(values({5}, dtype, 0.1), 1.0);
        Tensor rm_b = rm_a.clone(), rv_b = rv_a.clone();
        Tensor xa = x.clone().set_requires_grad(), xb = x.contiguous(kCl).detach();
        xb.set_requires_grad();
        Tensor wa = w0.clone().set_requires_grad(), wb = w0.clone().set_requires_grad();
        Tensor ba = b0.clone().set_requires_grad(), bb = b0.clone().set_requires_grad();
        const Tensor ya = norm(act, xa, wa, ba, rm_a, rv_a, mode);
        const Tensor yb = norm(act, xb, wb, bb, rm_b, rv_b, mode);
        EXPECT_EQ(yb.suggest_memory_format(), kCl) << what;
        EXPECT_TRUE(all_close(yb, ya, tol, tol)) << what;
        EXPECT_TRUE(all_close(rm_b, rm_a, tol, tol)) << what;
        EXPECT_TRUE(all_close(rv_b, rv_a, tol, tol)) << what;
        const Tensor gy = values(shape, dtype);
        ya.backward(gy);
        yb.backward(gy.contiguous(kCl));
        EXPECT_EQ(xb.grad().suggest_memory_format(), kCl) << what;
        EXPECT_TRUE(all_close(xb.grad(), xa.grad(), tol, tol)) << what;
        EXPECT_TRUE(all_close(wb.grad(), wa.grad(), tol, tol)) << what;
        EXPECT_TRUE(all_close(bb.grad(), ba.grad(), tol, tol)) << what;
      }
}

// gradcheck perturbs its (contiguous) inputs in memory order: each function converts x to
// channels-last first, so the NHWC path runs forward and backward.
Tensor nhwc(const Tensor& x) {
  return to_memory_format(x, kCl);
}

TEST(ChannelsLastBatchNorm, Gradchecks) {
  Tensor x = values({2, 3, 3, 2}, DType::f64).detach().set_requires_grad();
  Tensor w = add(values({3}, DType::f64), 1.5).detach().set_requires_grad();
  Tensor b = values({3}, DType::f64).detach().set_requires_grad();
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return batch_norm(nhwc(in[0]), in[1], in[2], Tensor(), Tensor(), BatchNormMode::train);
      },
      {x, w, b}));
  const Tensor rm = values({3}, DType::f64, 0.1), rv = add(values({3}, DType::f64, 0.1), 1.0);
  EXPECT_TRUE(testing::gradcheck(
      [&](const std::vector<Tensor>& in) {
        return batch_norm(nhwc(in[0]), in[1], in[2], rm, rv, BatchNormMode::eval);
      },
      {x, w, b}));
  // The relu's kink away from the inputs: a bias of 3 keeps every value positive.
  Tensor b_pos = add(b.detach(), 3.0).set_requires_grad();
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return batch_norm_relu(nhwc(in[0]), in[1], in[2], Tensor(), Tensor(), BatchNormMode::train);
      },
      {x, w, b_pos}));
}

TEST(ChannelsLastBatchNorm, BadInputIsNamedAsForNchw) {
  const Tensor x = values({2, 3, 4, 4}, DType::f32).contiguous(kCl);
  EXPECT_TRUE(throws_error(
      [&] { batch_norm(x, ones({4}), Tensor(), Tensor(), Tensor(), BatchNormMode::train); },
      {"batch_norm", "weight must have shape [3]", "[2, 3, 4, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] { batch_norm_relu(x, Tensor(), Tensor(), Tensor(), Tensor(), BatchNormMode::eval); },
      {"batch_norm_relu", "eval mode needs running_mean", "[2, 3, 4, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        batch_norm(values({1, 3, 1, 1}, DType::f32).contiguous(kCl), Tensor(), Tensor(), Tensor(),
                   Tensor(), BatchNormMode::train);
      },
      {"more than 1 value per channel"}));
}

struct Window {
  Shape shape;
  Pool2dSize kernel, stride, padding, dilation;
  CeilMode ceil;
};

const Window kWindows[] = {
    {{2, 5, 8, 6}, 2, 2, 0, 1, CeilMode::off},  // airbench's 2x2 pool
    {{2, 3, 7, 9}, 3, 2, 1, 1, CeilMode::off},  // overlapping, padded
    {{1, 4, 9, 8}, {3, 2}, {1, 2}, {1, 0}, {2, 3}, CeilMode::off},
    {{2, 3, 6, 7}, 3, 2, 1, 1, CeilMode::on},
    {{2, 6, 3, 3}, 3, 3, 0, 1, CeilMode::off},  // airbench94's global pool: 1 x 1 output
};

TEST(ChannelsLastMaxPool2d, MatchesTheNchwPathExactly) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16})
    for (const Window& c : kWindows) {
      const std::string what = std::string(dtype_name(dtype)) + " " + shape_str(c.shape);
      const Tensor x = values(c.shape, dtype, 2.0);
      Tensor xa = x.clone().set_requires_grad();
      Tensor xb = x.contiguous(kCl).detach().set_requires_grad();
      const MaxPool2dResult a = max_pool2d(xa, c.kernel, c.stride, c.padding, c.dilation, c.ceil);
      const MaxPool2dResult b = max_pool2d(xb, c.kernel, c.stride, c.padding, c.dilation, c.ceil);
      EXPECT_TRUE(b.output.is_contiguous(kCl)) << what;
      EXPECT_TRUE(b.indices.is_contiguous(kCl)) << what;
      EXPECT_TRUE(all_close(b.output, a.output, 0, 0)) << what;
      EXPECT_EQ(b.indices.to_vector<int64_t>(), a.indices.to_vector<int64_t>()) << what;
      const Tensor gy = values(a.output.shape(), dtype);
      a.output.backward(gy);
      b.output.backward(gy.contiguous(kCl));
      EXPECT_TRUE(xb.grad().is_contiguous(kCl)) << what;
      EXPECT_TRUE(all_close(xb.grad(), xa.grad(), 0, 0)) << what;
    }
}

TEST(ChannelsLastMaxPool2d, TiesAndNaNAsNchw) {
  Tensor x = zeros({1, 2, 4, 4});
  x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[16 + 6] = 1.0f;
  x.data<float>()[16 + 9] = 1.0f;  // a tie with the value before it in window order
  const MaxPool2dResult a = max_pool2d(x, 3, 1, 1);
  const MaxPool2dResult b = max_pool2d(x.contiguous(kCl), 3, 1, 1);
  EXPECT_EQ(b.indices.to_vector<int64_t>(), a.indices.to_vector<int64_t>());
  const std::vector<float> ya = a.output.to_vector<float>(), yb = b.output.to_vector<float>();
  for (std::size_t i = 0; i < ya.size(); ++i)
    EXPECT_TRUE(ya[i] == yb[i] || (std::isnan(ya[i]) && std::isnan(yb[i]))) << i;
}

TEST(ChannelsLastMaxPool2d, Gradchecks) {
  Tensor x = values({2, 3, 5, 6}, DType::f64).detach().set_requires_grad();
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return max_pool2d(nhwc(in[0]), 3, 2, 1).output; }, {x}));
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return max_pool2d(nhwc(in[0]), 2).output; }, {x}));
}

TEST(ChannelsLastMaxPool2d, BadInputIsNamedAsForNchw) {
  const Tensor x = values({2, 3, 4, 4}, DType::f32).contiguous(kCl);
  EXPECT_TRUE(throws_error([&] { max_pool2d(x, 2, 2, 2); },
                           {"max_pool2d", "padding", "at most half", "[2, 3, 4, 4]"}));
  EXPECT_TRUE(throws_error([&] { max_pool2d(x.to(DType::f64), 0); },
                           {"max_pool2d", "kernel_size must be positive"}));
  EXPECT_TRUE(throws_error(
      [&] {
        max_pool2d(full({2, 3, 4, 4}, 1.0, {DType::i64}).contiguous(kCl), 2);
      },
      {"max_pool2d", "floating"}));
}

}  // namespace
}  // namespace rg
