#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

struct Opts {
  Conv3dTriple stride{1, 1, 1}, padding{0, 0, 0}, output_padding{0, 0, 0};
  int64_t groups = 1;
  Conv3dTriple dilation{1, 1, 1};
};

TensorFn convt_fn(Opts o) {
  return [o](const std::vector<Tensor>& in) {
    return conv_transpose3d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), o.stride, o.padding,
                            o.output_padding, o.groups, o.dilation);
  };
}

// Tiny shapes: gradcheck is O(outputs × inputs).
TEST(ConvTranspose3d, GradcheckUpsamplingWithBias) {  // the UNet decoder's kernel 2, stride 2
  EXPECT_TRUE(gradcheck(convt_fn({.stride = {2, 2, 2}}),
                        {grad_input({1, 2, 2, 2, 1}), grad_input({2, 2, 2, 2, 2}, -1, 1, 2),
                         grad_input({2}, -1, 1, 3)}));
}

TEST(ConvTranspose3d, GradcheckPlain) {  // stride 1: backward-data runs the flipped forward
  EXPECT_TRUE(gradcheck(convt_fn({}),
                        {grad_input({2, 2, 2, 2, 2}), grad_input({2, 1, 2, 1, 2}, -1, 1, 2)}));
}

TEST(ConvTranspose3d, GradcheckPaddingAndOutputPadding) {
  EXPECT_TRUE(
      gradcheck(convt_fn({.stride = {2, 1, 2}, .padding = {1, 0, 0}, .output_padding = {1, 0, 1}}),
                {grad_input({1, 2, 2, 2, 2}), grad_input({2, 1, 3, 2, 2}, -1, 1, 2),
                 grad_input({1}, -1, 1, 3)}));
}

TEST(ConvTranspose3d, GradcheckDilationWithOutputPaddingAndGroups) {
  // output_padding 1 >= stride 1 is allowed since dilation is 2: extra slices get bias only.
  EXPECT_TRUE(gradcheck(convt_fn({.output_padding = {1, 0, 0}, .groups = 2, .dilation = {2, 1, 1}}),
                        {grad_input({1, 2, 2, 2, 2}), grad_input({2, 1, 2, 1, 2}, -1, 1, 2),
                         grad_input({2}, -1, 1, 3)}));
}

// Opts by const reference: by value, {.stride = {2, 2, 2}} reached the callee with a corrupted
// padding in the -march=native GCC 12 build (see nn/layers3d.h).
void check_case(const Fixture& f, const std::string& name, const Opts& o) {
  SCOPED_TRACE(name);
  const bool has_bias = f.has(name + ".b");
  Tensor x = f[name + ".x"].set_requires_grad(true);
  Tensor w = f[name + ".w"].set_requires_grad(true);
  Tensor b = has_bias ? f[name + ".b"].set_requires_grad(true) : Tensor();
  Tensor y = conv_transpose3d(x, w, b, o.stride, o.padding, o.output_padding, o.groups, o.dilation);
  EXPECT_TRUE(all_close(y, f[name + ".y"], 1e-4, 1e-4));
  y.backward(f[name + ".gy"]);
  EXPECT_TRUE(all_close(x.grad(), f[name + ".gx"], 1e-4, 1e-4));
  EXPECT_TRUE(all_close(w.grad(), f[name + ".gw"], 1e-4, 1e-4));
  if (has_bias) {
    EXPECT_TRUE(all_close(b.grad(), f[name + ".gb"], 1e-4, 1e-4));
  }
}

// The options of each case are those of ops/conv/transpose/conv_transpose3d_fixture.py.
TEST(ConvTranspose3d, MatchesPyTorch) {
  Fixture f("conv_transpose3d");
  check_case(f, "up2", {.stride = {2, 2, 2}});
  check_case(f, "plain", {});
  check_case(f, "mixed",
             {.stride = {2, 1, 2},
              .padding = {1, 0, 1},
              .output_padding = {1, 0, 0},
              .groups = 2,
              .dilation = {1, 2, 1}});
  check_case(f, "op_dil",
             {.padding = {1, 1, 0}, .output_padding = {1, 1, 0}, .dilation = {2, 2, 1}});
}

TEST(ConvTranspose3d, BadInput) {
  const Tensor x = ones({1, 3, 2, 2, 2}), w = ones({3, 2, 2, 2, 2});
  EXPECT_TRUE(throws_error(
      [&] {
        conv_transpose3d(ones({3, 2, 2, 2}), w);
      },
      {"conv_transpose3d", "input", "5-D", "[3, 2, 2, 2] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        conv_transpose3d(x, ones({3, 2, 2, 2}));
      },
      {"conv_transpose3d", "weight", "5-D", "[3, 2, 2, 2] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        conv_transpose3d(ones({1, 4, 2, 2, 2}), w);
      },
      {"conv_transpose3d", "[1, 4, 2, 2, 2]", "channels"}));
  EXPECT_TRUE(throws_error([&] { conv_transpose3d(x, w, ones({3})); },
                           {"conv_transpose3d", "bias", "[3] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        conv_transpose3d(x, w, Tensor(), {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 2);
      },
      {"conv_transpose3d", "groups (2)"}));
  EXPECT_TRUE(throws_error(
      [&] {
        conv_transpose3d(x, w, Tensor(), {2, 0, 2});
      },
      {"conv_transpose3d", "stride {2, 0, 2}"}));
  EXPECT_TRUE(throws_error(
      [&] {
        conv_transpose3d(x, w, Tensor(), {2, 2, 2}, {0, 0, 0}, {0, 2, 0});
      },
      {"conv_transpose3d", "output_padding {0, 2, 0}", "smaller"}));
  EXPECT_TRUE(throws_error(
      [&] {
        conv_transpose3d(x, w, Tensor(), {1, 1, 1}, {0, 2, 0});
      },
      {"conv_transpose3d", "output size", "<= 0"}));
  EXPECT_TRUE(throws_error([&] { conv_transpose3d(x.to(DType::i64), w.to(DType::i64)); },
                           {"conv_transpose3d", "i64"}));
}

}  // namespace
}  // namespace rg
