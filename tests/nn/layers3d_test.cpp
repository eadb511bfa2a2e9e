#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd.h"
#include "nn/layers3d.h"
#include "tests/support/fixtures.h"

namespace rg::nn {
namespace {
using testing::all_close;

TEST(Layers3d, ParametersHavePyTorchsShapesAndNames) {
  Conv3d conv(2, 4, {3, 3, 3}, {.padding = {1, 1, 1}});
  ConvTranspose3d up(4, 2, {2, 2, 2}, {.stride = {2, 2, 2}});
  auto state = conv.state_dict();
  EXPECT_EQ(state["weight"].shape(), (Shape{4, 2, 3, 3, 3}));
  EXPECT_EQ(state["bias"].shape(), (Shape{4}));
  state = up.state_dict();
  EXPECT_EQ(state["weight"].shape(), (Shape{4, 2, 2, 2, 2}));  // (in, out/groups, k...)
  EXPECT_EQ(state["bias"].shape(), (Shape{2}));
  // torch.nn.Conv3d(2, 4, 3) has 4·2·27 + 4 = 220 parameters, ConvTranspose3d(4, 2, 2) 66.
  int64_t n = 0;
  for (auto& [_, p] : conv.named_parameters()) n += p.numel();
  EXPECT_EQ(n, 220);
  n = 0;
  for (auto& [_, p] : up.named_parameters()) n += p.numel();
  EXPECT_EQ(n, 66);
  Conv3d grouped(4, 6, {1, 3, 3}, {.groups = 2, .bias = Bias::without});
  EXPECT_EQ(grouped.weight_.shape(), (Shape{6, 2, 1, 3, 3}));
  EXPECT_FALSE(grouped.bias_.defined());
  EXPECT_EQ(grouped.extra_repr(),
            "4, 6, kernel=(1, 3, 3), stride=1, padding=0, groups=2, bias=false");
}

TEST(Layers3d, ConvInitialisationFollowsConv2d) {
  manual_seed(0);
  Conv3d conv(16, 32, {3, 3, 3}, {.bias = Bias::without});
  double s2 = 0;
  const std::vector<double> w = conv.weight_.to_vector<double>();
  for (double v : w) s2 += v * v;
  // Kaiming normal, fan_out = 32·27: std = sqrt(2 / 864).
  EXPECT_NEAR(std::sqrt(s2 / w.size()), std::sqrt(2.0 / 864), 0.003);
}

// One encoder/decoder step of a 3-D UNet: conv, pool, transposed-conv upsampling, pad to the
// skip connection's size; the modules call the ops with their options.
TEST(Layers3d, EncoderDecoderStepShapesAndGradients) {
  manual_seed(1);
  Conv3d conv(1, 4, {3, 3, 3}, {.padding = {1, 1, 1}});
  MaxPool3d pool({2, 2, 2});
  ConvTranspose3d up(4, 4, {2, 2, 2}, {.stride = {2, 2, 2}});
  Tensor x = randn({1, 1, 5, 6, 7}).set_requires_grad(true);
  const Tensor skip = conv.forward(x);
  EXPECT_TRUE(all_close(skip, conv3d(x, conv.weight_, conv.bias_, {1, 1, 1}, {1, 1, 1}), 0, 0));
  const Tensor down = pool.forward(skip);
  EXPECT_EQ(down.shape(), (Shape{1, 4, 2, 3, 3}));
  Tensor upsampled = up.forward(down);
  EXPECT_EQ(upsampled.shape(), (Shape{1, 4, 4, 6, 6}));
  // F.pad order: last dim first. Align (4, 6, 6) with the skip's (5, 6, 7).
  upsampled = pad(upsampled, {0, 1, 0, 0, 0, 1});
  EXPECT_EQ(upsampled.shape(), skip.shape());
  sum(mul(upsampled, skip)).backward();
  for (Module* m : std::initializer_list<Module*>{&conv, &up})
    for (auto& [name, p] : m->named_parameters()) {
      ASSERT_TRUE(p.grad().defined()) << m->type_name() << "." << name;
    }
  EXPECT_EQ(x.grad().shape(), x.shape());
  EXPECT_EQ(pool.extra_repr(), "kernel=2, stride=2, padding=0");
}

TEST(Layers3d, BadChannels) {
  EXPECT_TRUE(testing::throws_error(
      [] {
        Conv3d(3, 4, {3, 3, 3}, {.groups = 2});
      },
      {"Conv3d", "in (3)", "groups (2)"}));
  EXPECT_TRUE(testing::throws_error(
      [] {
        ConvTranspose3d(0, 4, {2, 2, 2});
      },
      {"ConvTranspose3d", "in (0)"}));
}

}  // namespace
}  // namespace rg::nn
