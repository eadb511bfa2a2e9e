// The pytorch-cifar (kuangliu) models of nn/models/: each is built through make_model, compared
// with its PyTorch twin (tests/fixtures/model_zoo_parameters.txt, written by
// tools/pytorch_cifar_reference.py: the parameter count and every parameter's name and shape,
// so that pytorch-cifar checkpoints load into ours), and run forward on two CIFAR images.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "nn/models/zoo.h"
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

TEST(ModelZoo, NamesAreListed) {
  const auto names = model_names();
  for (const char* name :
       {"vgg16", "resnet34", "resnet50", "resnet101", "preactresnet18", "mobilenetv2"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  EXPECT_TRUE(throws_error([] { make_model("vgg19"); }, {"unknown model 'vgg19'", "mobilenetv2"}));
}

TEST(ModelZoo, FixedWidthModelsRejectAMultiplier) {
  for (const char* name : {"vgg16@0.5", "preactresnet18@2", "mobilenetv2@0.5"}) {
    EXPECT_TRUE(throws_error([&] { make_model(name); }, {name, "takes no width multiplier"}));
  }
  EXPECT_LT(make_model("resnet50@0.5")->parameter_count(), 23520842 / 3);
}

}  // namespace
}  // namespace rg::nn
