#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

struct Opts {
  Conv2dPair stride{1, 1}, padding{0, 0}, output_padding{0, 0};
  int64_t groups = 1;
  Conv2dPair dilation{1, 1};
};

TensorFn convt_fn(Opts o) {
  return [o](const std::vector<Tensor>& in) {
    return conv_transpose2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), o.stride, o.padding,
                            o.output_padding, o.groups, o.dilation);
  };
}

// Tiny shapes: gradcheck is O(outputs × inputs).
TEST(ConvTranspose2d, GradcheckPlainWithBias) {
  EXPECT_TRUE(gradcheck(convt_fn({}), {grad_input({2, 2, 3, 2}), grad_input({2, 3, 2, 2}, -1, 1, 2),
                                       grad_input({3}, -1, 1, 3)}));
}

TEST(ConvTranspose2d, GradcheckStrideAndOutputPadding) {
  EXPECT_TRUE(gradcheck(convt_fn({.stride = {2, 3}, .output_padding = {1, 2}}),
                        {grad_input({1, 2, 2, 2}), grad_input({2, 2, 2, 2}, -1, 1, 2)}));
}

TEST(ConvTranspose2d, GradcheckPadding) {
  EXPECT_TRUE(gradcheck(
      convt_fn({.stride = {2, 2}, .padding = {1, 0}}),
      {grad_input({1, 2, 3, 2}), grad_input({2, 2, 3, 2}, -1, 1, 2), grad_input({2}, -1, 1, 3)}));
}

TEST(ConvTranspose2d, GradcheckDilationWithOutputPadding) {
  // output_padding 1 >= stride 1 is allowed since dilation is 2: extra rows get bias only.
  EXPECT_TRUE(gradcheck(
      convt_fn({.padding = {1, 1}, .output_padding = {1, 0}, .dilation = {2, 2}}),
      {grad_input({1, 2, 3, 3}), grad_input({2, 1, 2, 2}, -1, 1, 2), grad_input({1}, -1, 1, 3)}));
}

TEST(ConvTranspose2d, GradcheckGroups) {
  EXPECT_TRUE(gradcheck(
      convt_fn({.stride = {2, 1}, .groups = 2}),
      {grad_input({2, 4, 2, 2}), grad_input({4, 1, 2, 2}, -1, 1, 2), grad_input({2}, -1, 1, 3)}));
}

TEST(ConvTranspose2d, GradcheckPointwise) {
  EXPECT_TRUE(
      gradcheck(convt_fn({}), {grad_input({2, 3, 2, 2}), grad_input({3, 2, 1, 1}, -1, 1, 2)}));
}

void check_case(const Fixture& f, const std::string& name, Opts o, double atol = 1e-5,
                double rtol = 1e-4) {
  SCOPED_TRACE(name);
  const bool has_bias = f.has(name + ".b");
  Tensor x = f[name + ".x"].set_requires_grad(true);
  Tensor w = f[name + ".w"].set_requires_grad(true);
  Tensor b = has_bias ? f[name + ".b"].set_requires_grad(true) : Tensor();
  Tensor y = conv_transpose2d(x, w, b, o.stride, o.padding, o.output_padding, o.groups, o.dilation);
  EXPECT_TRUE(all_close(y, f[name + ".y"], atol, rtol));
  y.backward(f[name + ".gy"]);
  EXPECT_TRUE(all_close(x.grad(), f[name + ".gx"], atol, rtol));
  EXPECT_TRUE(all_close(w.grad(), f[name + ".gw"], atol, rtol));
  if (has_bias) {
    EXPECT_TRUE(all_close(b.grad(), f[name + ".gb"], atol, rtol));
  }
}

// The options of each case are those of ops/conv/transpose/conv_transpose2d_fixture.py.
TEST(ConvTranspose2d, MatchesPyTorch) {
  Fixture f("conv_transpose2d");
  check_case(f, "basic", {.stride = {2, 2}, .padding = {1, 1}, .output_padding = {1, 1}});
  check_case(f, "plain", {});
  check_case(f, "mixed",
             {.stride = {1, 2},
              .padding = {1, 0},
              .output_padding = {0, 1},
              .groups = 2,
              .dilation = {2, 1}});
  check_case(f, "op_dil", {.padding = {1, 1}, .output_padding = {1, 1}, .dilation = {2, 2}});
  check_case(f, "pointwise", {});
  check_case(f, "big", {.padding = {1, 1}});
  check_case(f, "up2", {.stride = {2, 2}, .groups = 3});
}

TEST(ConvTranspose2d, BadInputShapes) {
  EXPECT_TRUE(throws_error(
      [] {
        conv_transpose2d(ones({2, 3, 3}), ones({3, 2, 3, 3}));
      },
      {"conv_transpose2d", "input", "4-D", "[2, 3, 3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv_transpose2d(ones({1, 3, 3, 3}), ones({3, 2, 3}));
      },
      {"conv_transpose2d", "weight", "4-D", "[3, 2, 3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv_transpose2d(ones({1, 4, 3, 3}), ones({3, 2, 3, 3}));
      },
      {"conv_transpose2d", "[1, 4, 3, 3] f32 cpu", "[3, 2, 3, 3] f32 cpu", "channels"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv_transpose2d(ones({1, 3, 3, 3}), ones({3, 2, 3, 3}), Tensor(), {1, 1}, {0, 0}, {0, 0},
                         2);
      },
      {"conv_transpose2d", "groups (2)", "[1, 3, 3, 3]"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv_transpose2d(ones({1, 3, 3, 3}), ones({3, 2, 3, 3}), ones({3}));
      },
      {"conv_transpose2d", "bias", "[3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv_transpose2d(ones({1, 3, 1, 1}), ones({3, 2, 1, 1}), Tensor(), {1, 1}, {1, 1});
      },
      {"conv_transpose2d", "output size", "<= 0"}));
}

TEST(ConvTranspose2d, BadInputOptions) {
  EXPECT_TRUE(throws_error(
      [] {
        conv_transpose2d(ones({1, 3, 3, 3}), ones({3, 2, 3, 3}), Tensor(), {0, 1});
      },
      {"conv_transpose2d", "stride {0, 1}"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv_transpose2d(ones({1, 3, 3, 3}), ones({3, 2, 3, 3}), Tensor(), {1, 1}, {0, -2});
      },
      {"conv_transpose2d", "padding {0, -2}"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv_transpose2d(ones({1, 3, 3, 3}), ones({3, 2, 3, 3}), Tensor(), {2, 2}, {0, 0}, {2, 0});
      },
      {"conv_transpose2d", "output_padding {2, 0}", "smaller"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv_transpose2d(ones({1, 3, 3, 3}), ones({3, 2, 3, 3}), Tensor(), {1, 1}, {0, 0}, {0, 0},
                         0);
      },
      {"conv_transpose2d", "groups must be >= 1"}));
}

TEST(ConvTranspose2d, BadInputDtypes) {
  EXPECT_TRUE(throws_error(
      [] {
        conv_transpose2d(ones({1, 3, 3, 3}), ones({3, 2, 3, 3}, {DType::f64}));
      },
      {"conv_transpose2d", "dtype mismatch", "[3, 2, 3, 3] f64 cpu"}));
  EXPECT_TRUE(throws_error(
      [] {
        conv_transpose2d(ones({1, 3, 3, 3}, {DType::i64}), ones({3, 2, 3, 3}, {DType::i64}));
      },
      {"conv_transpose2d", "[1, 3, 3, 3] i64 cpu"}));
}

}  // namespace
}  // namespace rg
