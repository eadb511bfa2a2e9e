#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

struct Opts {
  Conv2dPair stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};

TensorFn conv_fn(Opts o) {
  return [o](const std::vector<Tensor>& in) {
    return conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), o.stride, o.padding, o.dilation,
                  o.groups);
  };
}

// Tiny shapes: gradcheck is O(outputs × inputs).
TEST(Conv2d, GradcheckPlainWithBias) {
  EXPECT_TRUE(gradcheck(conv_fn({}), {grad_input({2, 2, 4, 3}), grad_input({3, 2, 2, 2}, -1, 1, 2),
                                      grad_input({3}, -1, 1, 3)}));
}

TEST(Conv2d, GradcheckStride) {
  EXPECT_TRUE(gradcheck(conv_fn({.stride = {2, 3}}),
                        {grad_input({1, 2, 5, 7}), grad_input({2, 2, 3, 2}, -1, 1, 2)}));
}

TEST(Conv2d, GradcheckPadding) {
  EXPECT_TRUE(gradcheck(
      conv_fn({.padding = {1, 2}}),
      {grad_input({1, 2, 3, 3}), grad_input({2, 2, 3, 3}, -1, 1, 2), grad_input({2}, -1, 1, 3)}));
}

TEST(Conv2d, GradcheckDilation) {
  EXPECT_TRUE(gradcheck(conv_fn({.padding = {1, 0}, .dilation = {2, 2}}),
                        {grad_input({1, 2, 5, 5}), grad_input({2, 2, 2, 2}, -1, 1, 2)}));
}

TEST(Conv2d, GradcheckGroups) {
  EXPECT_TRUE(gradcheck(
      conv_fn({.padding = {1, 1}, .groups = 2}),
      {grad_input({2, 4, 3, 3}), grad_input({4, 2, 2, 2}, -1, 1, 2), grad_input({4}, -1, 1, 3)}));
}

TEST(Conv2d, GradcheckDepthwiseStridedDilated) {
  EXPECT_TRUE(
      gradcheck(conv_fn({.stride = {2, 1}, .padding = {1, 1}, .dilation = {1, 2}, .groups = 3}),
                {grad_input({1, 3, 4, 4}), grad_input({3, 1, 2, 2}, -1, 1, 2)}));
}

TEST(Conv2d, GradcheckPointwise) {  // 1x1 kernel, stride 1, no padding
  EXPECT_TRUE(gradcheck(conv_fn({}), {grad_input({3, 3, 2, 2}), grad_input({2, 3, 1, 1}, -1, 1, 2),
                                      grad_input({2}, -1, 1, 3)}));
}

// >= 32 channels per group: stride-1 backward-data runs as a convolution of gy with the
// flipped, transposed kernel (the other tests have fewer channels and use col2im).
TEST(Conv2d, GradcheckManyChannelsFlippedKernelPath) {
  EXPECT_TRUE(gradcheck(conv_fn({.padding = {1, 0}, .dilation = {1, 2}, .groups = 2}),
                        {grad_input({1, 64, 3, 3}), grad_input({2, 32, 2, 2}, -1, 1, 2)}));
}

TEST(Conv2d, GradcheckOnlyWeightNeedsGrad) {
  Tensor x = grad_input({2, 2, 3, 3}).detach();  // the data: no gradient, no backward-data
  EXPECT_TRUE(gradcheck(conv_fn({.padding = {1, 1}}), {x, grad_input({2, 2, 3, 3}, -1, 1, 2)}));
}

void check_case(const Fixture& f, const std::string& name, Opts o, double atol = 1e-5,
                double rtol = 1e-4) {
  SCOPED_TRACE(name);
  const bool has_bias = f.has(name + ".b");
  Tensor x = f[name + ".x"].set_requires_grad(true);
  Tensor w = f[name + ".w"].set_requires_grad(true);
  Tensor b = has_bias ? f[name + ".b"].set_requires_grad(true) : Tensor();
  Tensor y = conv2d(x, w, b, o.stride, o.padding, o.dilation, o.groups);
  EXPECT_TRUE(all_close(y, f[name + ".y"], atol, rtol));
  y.backward(f[name + ".gy"]);
  EXPECT_TRUE(all_close(x.grad(), f[name + ".gx"], atol, rtol));
  EXPECT_TRUE(all_close(w.grad(), f[name + ".gw"], atol, rtol));
  if (has_bias) {
    EXPECT_TRUE(all_close(b.grad(), f[name + ".gb"], atol, rtol));
  }
}

// The options of each case are those of ops/conv/conv2d_fixture.py.
TEST(Conv2d, MatchesPyTorch) {
  Fixture f("conv2d");
  check_case(f, "basic", {.padding = {1, 1}});
  check_case(f, "s2p1", {.stride = {2, 2}, .padding = {1, 1}});
  check_case(f, "mixed", {.stride = {2, 1}, .padding = {0, 2}, .dilation = {2, 1}});
  check_case(f, "groups", {.groups = 2});
  check_case(f, "depthwise", {.stride = {1, 2}, .padding = {1, 1}, .groups = 3});
  check_case(f, "pointwise", {});
  check_case(f, "big", {.padding = {1, 1}});
  check_case(f, "pointwise_big", {});
  check_case(f, "wide", {.padding = {1, 1}});
  check_case(f, "wide_groups", {.padding = {2, 1}, .dilation = {2, 1}, .groups = 2});
  check_case(f, "short_s2", {.stride = {2, 2}});
  check_case(f, "small", {.padding = {1, 1}});
}

TEST(Conv2d, NonContiguousInputs) {
  Tensor x = grad_input({2, 3, 5, 4}).detach(), w = grad_input({4, 3, 3, 3}, -1, 1, 2).detach();
  Tensor xt = x.transpose(2, 3).contiguous().transpose(2, 3);  // same values, other strides
  Tensor wt = w.transpose(0, 1).contiguous().transpose(0, 1);
  ASSERT_FALSE(xt.is_contiguous());
  EXPECT_TRUE(all_close(conv2d(xt, wt, Tensor(), {1, 1}, {1, 1}),
                        conv2d(x, w, Tensor(), {1, 1}, {1, 1}), 1e-12, 1e-12));
}

// The batch is split over threads and backward-weight sums per-thread partials: one thread
// and many must agree (odd batch: unequal parts).
TEST(Conv2d, SameResultForAnyThreadCount) {
  auto run = [] {
    Tensor x = grad_input({5, 4, 6, 6}), w = grad_input({3, 4, 3, 3}, -1, 1, 2);
    Tensor b = grad_input({3}, -1, 1, 3);
    Tensor y = conv2d(x, w, b, {2, 1}, {1, 1});
    y.backward(grad_input(y.shape(), -1, 1, 4).detach());
    return std::vector<Tensor>{y, x.grad(), w.grad(), b.grad()};
  };
  const int threads = num_threads();
  set_num_threads(1);
  std::vector<Tensor> one = run();
  set_num_threads(3);
  std::vector<Tensor> three = run();
  set_num_threads(threads);
  for (std::size_t i = 0; i < one.size(); ++i)
    EXPECT_TRUE(all_close(three[i], one[i], 1e-12, 1e-12)) << "result " << i;
}

TEST(Conv2d, EmptyBatch) {
  Tensor x = zeros({0, 2, 5, 5}).set_requires_grad(true);
  Tensor w = ones({3, 2, 3, 3}).set_requires_grad(true);
  Tensor y = conv2d(x, w, Tensor(), {1, 1}, {1, 1});
  EXPECT_EQ(y.shape(), (Shape{0, 3, 5, 5}));
  y.backward(zeros({0, 3, 5, 5}));
  EXPECT_EQ(x.grad().shape(), x.shape());
  EXPECT_TRUE(all_close(w.grad(), zeros({3, 2, 3, 3})));
}

TEST(Conv2d, BadInputShapes) {
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({2, 5, 5}), ones({3, 2, 3, 3}));
      },
      {"conv2d", "input", "4-D", "[2, 5, 5] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 2, 5, 5}), ones({3, 2, 3}));
      },
      {"conv2d", "weight", "4-D", "[3, 2, 3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 3, 5, 5}), ones({4, 2, 3, 3}));
      },
      {"conv2d", "[1, 3, 5, 5]", "[4, 2, 3, 3]", "channels"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 3, 5, 5}), ones({4, 1, 3, 3}), Tensor(), {1, 1}, {0, 0}, {1, 1}, 2);
      },
      {"conv2d", "groups", "[1, 3, 5, 5]"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 4, 5, 5}), ones({3, 2, 3, 3}), Tensor(), {1, 1}, {0, 0}, {1, 1}, 2);
      },
      {"conv2d", "output channels", "[3, 2, 3, 3]", "groups"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 2, 5, 5}), ones({3, 2, 3, 3}), ones({4}));
      },
      {"conv2d", "bias", "[4] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 2, 2, 2}), ones({3, 2, 3, 3}));
      },
      {"conv2d", "output size", "<= 0", "[1, 2, 2, 2]", "[3, 2, 3, 3]"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 2, 4, 4}), ones({3, 2, 3, 3}), Tensor(), {1, 1}, {0, 0}, {2, 2});
      },
      {"conv2d", "output size", "dilated kernel 5"}));
}

TEST(Conv2d, BadInputOptions) {
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 2, 5, 5}), ones({3, 2, 3, 3}), Tensor(), {1, 1}, {-1, 0});
      },
      {"conv2d", "padding {-1, 0}"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 2, 5, 5}), ones({3, 2, 3, 3}), Tensor(), {0, 1});
      },
      {"conv2d", "stride {0, 1}"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 2, 5, 5}), ones({3, 2, 3, 3}), Tensor(), {1, 1}, {0, 0}, {1, 0});
      },
      {"conv2d", "dilation {1, 0}"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 2, 5, 5}), ones({3, 2, 3, 3}), Tensor(), {1, 1}, {0, 0}, {1, 1}, 0);
      },
      {"conv2d", "groups must be >= 1"}));
}

TEST(Conv2d, BadInputDtypes) {
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 2, 5, 5}), ones({3, 2, 3, 3}, {DType::f64}));
      },
      {"conv2d", "dtype mismatch", "[1, 2, 5, 5] f32 cpu", "[3, 2, 3, 3] f64 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 2, 5, 5}), ones({3, 2, 3, 3}), ones({3}, {DType::f64}));
      },
      {"conv2d", "dtype mismatch", "[3] f64 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv2d(ones({1, 2, 5, 5}, {DType::i64}), ones({3, 2, 3, 3}, {DType::i64}));
      },
      {"conv2d", "[1, 2, 5, 5] i64 cpu"}));
}

}  // namespace
}  // namespace rg
