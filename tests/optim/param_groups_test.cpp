#include "optim/param_groups.h"

#include <gtest/gtest.h>

#include "nn/models/zoo.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using rg::testing::throws_error;

bool holds(const std::vector<Tensor>& group, const Tensor& t) {
  for (const Tensor& p : group)
    if (p.same_as(t)) return true;
  return false;
}

TEST(ParamGroups, NormBiasesGetAScaledLrAndTheSameDecayPerStep) {
  auto model = nn::make_model("airbench94");
  const SGDOptions options{
      .lr = 1.5, .momentum = 0.85, .weight_decay = 0.001, .nesterov = Nesterov::on};
  const auto groups = norm_bias_groups(*model, model->parameters(), options, 64);
  ASSERT_EQ(groups.size(), 2u);
  std::map<std::string, Tensor> p;
  for (const auto& [name, t] : model->named_parameters()) p[name] = t;
  // 3 groups x 2 BatchNorms: their biases, and nothing else, in the second group.
  EXPECT_EQ(groups[1].params.size(), 6u);
  EXPECT_TRUE(holds(groups[1].params, p.at("group1.norm1.bias")));
  EXPECT_TRUE(holds(groups[1].params, p.at("group3.norm2.bias")));
  EXPECT_FALSE(holds(groups[1].params, p.at("whiten.bias")));  // a conv's bias
  EXPECT_TRUE(holds(groups[0].params, p.at("whiten.bias")));
  EXPECT_TRUE(holds(groups[0].params, p.at("group3.norm2.weight")));
  EXPECT_TRUE(holds(groups[0].params, p.at("head.weight")));
  EXPECT_EQ(groups[0].params.size() + groups[1].params.size(), p.size());
  EXPECT_DOUBLE_EQ(groups[0].options.lr, 1.5);
  EXPECT_DOUBLE_EQ(groups[1].options.lr, 96);
  EXPECT_DOUBLE_EQ(groups[0].options.weight_decay, 0.001);
  EXPECT_DOUBLE_EQ(groups[1].options.lr * groups[1].options.weight_decay, 1.5 * 0.001);
  EXPECT_DOUBLE_EQ(groups[1].options.momentum, 0.85);
  EXPECT_EQ(groups[1].options.nesterov, Nesterov::on);

  // Scale 1: one group of everything, as given.
  EXPECT_EQ(norm_bias_groups(*model, model->parameters(), options, 1).size(), 1u);
  EXPECT_TRUE(throws_error([&] { norm_bias_groups(*model, {p.at("head.weight")}, options, 64); },
                           {"norm_bias_groups", "1 parameters"}));
  auto plain = nn::make_model("resnet18@0.125");
  EXPECT_EQ(norm_bias_groups(*plain, plain->parameters(), options, 2)[1].params.size(),
            static_cast<std::size_t>(1 + 8 * 2 + 3));  // stem, 8 blocks x 2, 3 shortcuts
}

}  // namespace
}  // namespace rg
