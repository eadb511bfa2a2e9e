// The pytorch-cifar (kuangliu) models of nn/models/: each is built through make_model, compared
// with its PyTorch twin (tests/fixtures/model_zoo_parameters.txt, written by
// tools/pytorch_cifar_reference.py: the parameter count and every parameter's name and shape,
// so that pytorch-cifar checkpoints load into ours), and run forward on two CIFAR images.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "nn/models/zoo.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg::nn {
namespace {

using rg::testing::throws_error;

struct Reference {
  int64_t parameter_count = -1;
  std::vector<std::pair<std::string, std::string>> shapes;  // name, "64x3x3x3"
};

// The fixture's block for `model`: "model <name> <count>" then "  <param> <shape>" lines.
Reference load_reference(const std::string& model) {
  const std::string path = std::string(RG_FIXTURE_DIR) + "/model_zoo_parameters.txt";
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot open " << path;
  Reference ref;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string first, second;
    fields >> first >> second;
    if (first == "model") {
      inside = second == model;
      if (inside) fields >> ref.parameter_count;
    } else if (inside) {
      ref.shapes.emplace_back(first, second);
    }
  }
  EXPECT_GE(ref.parameter_count, 0) << "no model '" << model << "' in " << path;
  return ref;
}

std::string shape_text(const Shape& shape) {
  std::string text;
  for (auto d : shape) text += (text.empty() ? "" : "x") + std::to_string(d);
  return text;
}

void expect_matches_pytorch(const std::string& name) {
  SCOPED_TRACE(name);
  const Reference ref = load_reference(name);
  auto model = make_model(name, 10);
  EXPECT_EQ(model->parameter_count(), ref.parameter_count);
  std::vector<std::pair<std::string, std::string>> ours;
  for (const auto& [key, p] : model->named_parameters())
    ours.emplace_back(key, shape_text(p.shape()));
  // Entry by entry: gtest prints only the start of two long vectors.
  EXPECT_EQ(ours.size(), ref.shapes.size());
  for (std::size_t i = 0; i < std::min(ours.size(), ref.shapes.size()); ++i) {
    ASSERT_EQ(ours[i], ref.shapes[i]) << "parameter " << i << " (name, shape) differs";
  }

  Tensor y = model->forward(randn({2, 3, 32, 32}));
  EXPECT_EQ(y.shape(), (Shape{2, 10}));
}

TEST(ModelZoo, ResNet34MatchesPyTorch) {
  expect_matches_pytorch("resnet34");
}
TEST(ModelZoo, ResNet50MatchesPyTorch) {
  expect_matches_pytorch("resnet50");
}
TEST(ModelZoo, ResNet101MatchesPyTorch) {
  expect_matches_pytorch("resnet101");
}
TEST(ModelZoo, VGG16MatchesPyTorch) {
  expect_matches_pytorch("vgg16");
}
TEST(ModelZoo, PreActResNet18MatchesPyTorch) {
  expect_matches_pytorch("preactresnet18");
}
TEST(ModelZoo, MobileNetV2MatchesPyTorch) {
  expect_matches_pytorch("mobilenetv2");
}

// airbench94's twin is tools/resnet_reference.py's Airbench94 (airbench94.py's make_net).
TEST(ModelZoo, Airbench94MatchesPyTorch) {
  expect_matches_pytorch("airbench94");
}

TEST(ModelZoo, Airbench94StartsAsAirbench94Does) {
  auto model = make_model("airbench94");
  std::map<std::string, Tensor> p;
  for (const auto& [key, t] : model->named_parameters()) p[key] = t;
  // BatchNorm weights fixed at 1; only the biases train.
  EXPECT_FALSE(p.at("group2.norm1.weight").requires_grad());
  EXPECT_TRUE(p.at("group2.norm1.bias").requires_grad());
  EXPECT_EQ(sum(p.at("group2.norm1.weight")).item(), 256.0);
  // Dirac: the first `in` filters of each 3x3 conv are identity maps, the others random.
  const Tensor w = p.at("group2.conv1.weight").contiguous();  // (256, 64, 3, 3)
  const float* v = w.data<float>();
  for (int64_t o : {0, 17, 63})
    for (int64_t i = 0; i < 64; ++i)
      for (int64_t k = 0; k < 9; ++k)
        ASSERT_EQ(v[(o * 64 + i) * 9 + k], (i == o && k == 4) ? 1.0f : 0.0f) << o << " " << i;
  EXPECT_NE(v[(64 * 64 + 64) * 9 + 4], 1.0f);  // filter 64, past the identity block
  // The whitening bias starts at 0.
  const Tensor b = p.at("whiten.bias");
  EXPECT_EQ(sum(mul(b, b)).item(), 0.0);
}

TEST(ModelZoo, NamesAreListed) {
  const auto names = model_names();
  for (const char* name : {"airbench94", "vgg16", "resnet34", "resnet50", "resnet101",
                           "preactresnet18", "mobilenetv2"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  EXPECT_TRUE(throws_error([] { make_model("vgg19"); }, {"unknown model 'vgg19'", "mobilenetv2"}));
}

TEST(ModelZoo, FixedWidthModelsRejectAMultiplier) {
  for (const char* name : {"vgg16@0.5", "preactresnet18@2", "mobilenetv2@0.5", "airbench94@0.5"}) {
    EXPECT_TRUE(throws_error([&] { make_model(name); }, {name, "takes no width multiplier"}));
  }
  EXPECT_LT(make_model("resnet50@0.5")->parameter_count(), 23520842 / 3);
}

}  // namespace
}  // namespace rg::nn
