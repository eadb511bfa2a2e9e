#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

struct Opts {
  Conv3dTriple stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  int64_t groups = 1;
};

TensorFn conv_fn(Opts o) {
  return [o](const std::vector<Tensor>& in) {
    return conv3d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), o.stride, o.padding, o.dilation,
                  o.groups);
  };
}

// Tiny shapes: gradcheck is O(outputs × inputs).
TEST(Conv3d, GradcheckPaddedWithBias) {  // stride 1: backward-data runs the flipped forward
  EXPECT_TRUE(gradcheck(conv_fn({.padding = {1, 1, 1}}),
                        {grad_input({2, 2, 3, 3, 2}), grad_input({2, 2, 3, 3, 2}, -1, 1, 2),
                         grad_input({2}, -1, 1, 3)}));
}

TEST(Conv3d, GradcheckStrideAndPadding) {  // strided: Wᵀ·gy and col2vol
  EXPECT_TRUE(gradcheck(conv_fn({.stride = {2, 1, 2}, .padding = {1, 0, 1}}),
                        {grad_input({1, 2, 4, 3, 4}), grad_input({2, 2, 2, 2, 3}, -1, 1, 2)}));
}

TEST(Conv3d, GradcheckDilation) {
  EXPECT_TRUE(gradcheck(conv_fn({.padding = {0, 1, 1}, .dilation = {2, 1, 2}}),
                        {grad_input({1, 1, 4, 3, 4}), grad_input({2, 1, 2, 2, 2}, -1, 1, 2),
                         grad_input({2}, -1, 1, 3)}));
}

TEST(Conv3d, GradcheckGroups) {
  EXPECT_TRUE(gradcheck(conv_fn({.stride = {1, 2, 1}, .groups = 2}),
                        {grad_input({2, 4, 2, 3, 3}), grad_input({4, 2, 1, 2, 2}, -1, 1, 2),
                         grad_input({4}, -1, 1, 3)}));
}

TEST(Conv3d, GradcheckPointwise) {  // the column matrix is the volume itself
  EXPECT_TRUE(
      gradcheck(conv_fn({}), {grad_input({2, 3, 2, 2, 3}), grad_input({2, 3, 1, 1, 1}, -1, 1, 2)}));
}

void check_case(const Fixture& f, const std::string& name, Opts o) {
  SCOPED_TRACE(name);
  const bool has_bias = f.has(name + ".b");
  Tensor x = f[name + ".x"].set_requires_grad(true);
  Tensor w = f[name + ".w"].set_requires_grad(true);
  Tensor b = has_bias ? f[name + ".b"].set_requires_grad(true) : Tensor();
  Tensor y = conv3d(x, w, b, o.stride, o.padding, o.dilation, o.groups);
  EXPECT_TRUE(all_close(y, f[name + ".y"], 1e-4, 1e-4));
  y.backward(f[name + ".gy"]);
  EXPECT_TRUE(all_close(x.grad(), f[name + ".gx"], 1e-4, 1e-4));
  EXPECT_TRUE(all_close(w.grad(), f[name + ".gw"], 1e-4, 1e-4));
  if (has_bias) {
    EXPECT_TRUE(all_close(b.grad(), f[name + ".gb"], 1e-4, 1e-4));
  }
}

// The options of each case are those of ops/conv/conv3d_fixture.py.
TEST(Conv3d, MatchesPyTorch) {
  Fixture f("conv3d");
  check_case(f, "unet", {.padding = {1, 1, 1}});
  check_case(f, "strided", {.stride = {2, 1, 2}, .padding = {1, 0, 1}});
  check_case(f, "dilated", {.stride = {1, 2, 1}, .padding = {0, 1, 2}, .dilation = {2, 1, 2}});
  check_case(f, "groups", {.stride = {1, 1, 2}, .padding = {1, 0, 1}, .groups = 2});
  check_case(f, "pointwise", {});
  check_case(f, "deep", {.padding = {1, 1, 1}});
}

// The result must not depend on how many threads share the tiles (slabs per volume change
// with the thread count; backward-weight sums one partial per thread in a fixed order) beyond
// rounding. The partials' order does change with the thread count, so the check runs in f64,
// where a lost or doubled tile cannot hide: in f32 one element of "deep".gw sums terms of 520
// in magnitude to 0.05286, and 1 and 3 threads give 0.05284 and 0.05285 on a Zen 5: both
// within f32's rounding of that sum (2^-24 x 520 = 3.1e-5 of the exact value).
TEST(Conv3d, SameResultForAnyThreadCount) {
  Fixture f("conv3d");
  auto f64 = [&](const std::string& name) { return f[name].to(DType::f64); };
  const Tensor x = f64("deep.x"), w = f64("deep.w"), gy = f64("deep.gy");
  const Conv3dParams p{.padding = {1, 1, 1}};
  // backward-data of a strided conv: Wᵀ·gy split by columns, col2vol by channels.
  const Tensor sw = f64("strided.w"), sgy = f64("strided.gy");
  const Shape sx = f["strided.x"].shape();
  const Conv3dParams sp{.stride = {2, 1, 2}, .padding = {1, 0, 1}};
  const int saved_threads = num_threads();
  set_num_threads(1);
  const Tensor y1 = conv_forward<3>(x, w, Tensor(), p);
  const Tensor gw1 = conv_backward_weight<3>(gy, x, w.shape(), p);
  const Tensor gx1 = conv_backward_data<3>(sgy, sw, sx, sp);
  set_num_threads(3);
  const Tensor y3 = conv_forward<3>(x, w, Tensor(), p);
  const Tensor gw3 = conv_backward_weight<3>(gy, x, w.shape(), p);
  const Tensor gx3 = conv_backward_data<3>(sgy, sw, sx, sp);
  set_num_threads(saved_threads);
  EXPECT_TRUE(all_close(y1, y3, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(gw1, gw3, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(gx1, gx3, 1e-12, 1e-12));
}

TEST(Conv3d, HalfAndBFloat16AreF32MathRoundedOnce) {
  Fixture f("conv3d");
  const Tensor x = f["unet.x"], w = f["unet.w"], b = f["unet.b"];
  for (DType d : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(d));
    auto round = [d](const Tensor& t) { return t.to(d); };
    // The f32 convolution of the already-rounded operands, then one rounding of the result:
    // within half an ulp of the 16-bit format (2^-11 for f16, 2^-8 for bf16), relatively.
    const Tensor ref = conv3d(round(x).to(DType::f32), round(w).to(DType::f32),
                              round(b).to(DType::f32), {1, 1, 1}, {1, 1, 1});
    const Tensor y = conv3d(round(x), round(w), round(b), {1, 1, 1}, {1, 1, 1});
    EXPECT_EQ(y.dtype(), d);
    EXPECT_TRUE(all_close(y.to(DType::f32), ref, 1e-6, d == DType::f16 ? 0x1p-11 : 0x1p-8));
  }
}

TEST(Conv3d, NonContiguousInputsGiveTheSameResult) {
  Fixture f("conv3d");
  const Tensor x = f["groups.x"], w = f["groups.w"], b = f["groups.b"];
  const Conv3dTriple stride{1, 1, 2}, padding{1, 0, 1};
  const Tensor ref = conv3d(x, w, b, stride, padding, {1, 1, 1}, 2);
  // Same values, permuted strides.
  const Tensor xs = x.transpose(2, 4).contiguous().transpose(2, 4);
  const Tensor ws = w.transpose(0, 1).contiguous().transpose(0, 1);
  ASSERT_FALSE(xs.is_contiguous());
  EXPECT_TRUE(all_close(conv3d(xs, ws, b, stride, padding, {1, 1, 1}, 2), ref, 0, 0));
}

TEST(Conv3d, BadInputShapes) {
  EXPECT_TRUE(throws_error(
      [] {
        conv3d(ones({2, 3, 3, 3}), ones({3, 3, 3, 3, 3}));
      },
      {"conv3d", "input", "5-D", "[2, 3, 3, 3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv3d(ones({1, 3, 3, 3, 3}), ones({3, 3, 3, 3}));
      },
      {"conv3d", "weight", "5-D", "[3, 3, 3, 3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv3d(ones({1, 4, 3, 3, 3}), ones({2, 3, 3, 3, 3}));
      },
      {"conv3d", "[1, 4, 3, 3, 3]", "[2, 3, 3, 3, 3]", "channels"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv3d(ones({1, 3, 3, 3, 3}), ones({2, 3, 3, 3, 3}), ones({3}));
      },
      {"conv3d", "bias", "[3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv3d(ones({1, 3, 2, 3, 3}), ones({2, 3, 3, 3, 3}));
      },
      {"conv3d", "output size", "<= 0", "[1, 3, 2, 3, 3]"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv3d(ones({1, 3, 3, 3, 3}), ones({2, 1, 1, 1, 1}), Tensor(), {1, 1, 1}, {0, 0, 0},
               {1, 1, 1}, 3);
      },
      {"conv3d", "output channels (2", "groups (3)"}));
}

TEST(Conv3d, BadInputOptionsAndTypes) {
  EXPECT_TRUE(throws_error(
      [] {
        conv3d(ones({1, 2, 3, 3, 3}), ones({2, 2, 1, 1, 1}), Tensor(), {1, 0, 1});
      },
      {"conv3d", "stride {1, 0, 1}"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv3d(ones({1, 2, 3, 3, 3}), ones({2, 2, 1, 1, 1}), Tensor(), {1, 1, 1}, {0, 0, -1});
      },
      {"conv3d", "padding {0, 0, -1}"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv3d(ones({1, 2, 3, 3, 3}), ones({2, 2, 1, 1, 1}), Tensor(), {1, 1, 1}, {0, 0, 0},
               {1, 1, 1}, 0);
      },
      {"conv3d", "groups must be >= 1"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv3d(ones({1, 2, 3, 3, 3}), ones({2, 2, 1, 1, 1}, {DType::f64}));
      },
      {"conv3d", "f64"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv3d(ones({1, 2, 3, 3, 3}, {DType::i64}), ones({2, 2, 1, 1, 1}));
      },
      {"conv3d", "i64"}));
}

}  // namespace
}  // namespace rg
