// nn/models/unet.h against its PyTorch twin (tools/unet_reference.py wrote
// tests/fixtures/unet_parameters.txt: parameter count, every parameter's name and shape, and the
// output shape of one input), and against the twin's values (tests/fixtures/unet.safetensors
// from tools/fixtures/unet.py: weights, an input, the output and the input's gradient); forward
// and backward on tiny inputs in 2-D and 3-D; make_model's names and bad inputs.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/autograd.h"
#include "nn/models/unet.h"
#include "nn/models/zoo.h"
#include "tests/support/fixtures.h"

namespace rg::nn {
namespace {

using rg::testing::throws_error;

struct Reference {
  int64_t parameter_count = -1;
  std::vector<std::pair<std::string, std::string>> shapes;  // name, "64x3x3x3"
  std::string input, output;                                // "1x3x32x32"
};

Reference load_reference(const std::string& model) {
  const std::string path = std::string(RG_FIXTURE_DIR) + "/unet_parameters.txt";
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
    } else if (inside && first == "io") {
      ref.input = second;
      fields >> ref.output;
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

Shape parse_shape(const std::string& text) {
  Shape shape;
  std::istringstream in(text);
  for (std::string d; std::getline(in, d, 'x');) shape.push_back(std::stoll(d));
  return shape;
}

// The configurations of tools/unet_reference.py's CONFIGS, by the same names.
const std::map<std::string, UNetConfig>& configs() {
  static const std::map<std::string, UNetConfig> c = {
      {"unet2d", unet2d_config()},
      {"unet3d", unet3d_config()},
      {"unet2d_interp",
       {.dims = 2,
        .in_channels = 1,
        .num_classes = 3,
        .depth = 2,
        .base_width = 4,
        .decoder = UNetDecoder::interpolate}},
      {"unet2d_nobn",
       {.dims = 2,
        .in_channels = 2,
        .num_classes = 4,
        .depth = 2,
        .base_width = 6,
        .norm = UNetNorm::none}},
      {"unet3d_interp_nobn",
       {.dims = 3,
        .in_channels = 2,
        .num_classes = 2,
        .depth = 2,
        .base_width = 4,
        .decoder = UNetDecoder::interpolate,
        .norm = UNetNorm::none}},
      {"unet3d_odd", {.dims = 3, .in_channels = 1, .num_classes = 2, .depth = 2, .base_width = 2}},
  };
  return c;
}

void expect_matches_pytorch(const std::string& name, std::shared_ptr<Module> model,
                            bool run_forward) {
  SCOPED_TRACE(name);
  const Reference ref = load_reference(name);
  EXPECT_EQ(model->parameter_count(), ref.parameter_count);
  std::vector<std::pair<std::string, std::string>> ours;
  for (const auto& [key, p] : model->named_parameters())
    ours.emplace_back(key, shape_text(p.shape()));
  EXPECT_EQ(ours.size(), ref.shapes.size());
  for (std::size_t i = 0; i < std::min(ours.size(), ref.shapes.size()); ++i) {
    ASSERT_EQ(ours[i], ref.shapes[i]) << "parameter " << i << " (name, shape) differs";
  }
  if (!run_forward) return;
  model->eval();  // as the twin, which may meet 1-voxel maps without batch statistics
  NoGradGuard no_grad;
  const Tensor y = model->forward(randn(parse_shape(ref.input)));
  EXPECT_EQ(shape_text(y.shape()), ref.output);
}

TEST(UNet, MakeModelDefaultsMatchPyTorch) {
  // 31,037,698 parameters: Pytorch-UNet's UNet(n_channels=3, n_classes=2).
  expect_matches_pytorch("unet2d", make_model("unet2d"), /*run_forward=*/false);
  // The seeds' UNet3d(n_channels=1, n_classes=1): depth 3, base width 32.
  expect_matches_pytorch("unet3d", make_model("unet3d"), /*run_forward=*/true);
}

TEST(UNet, EveryOptionMatchesPyTorch) {
  for (const char* name : {"unet2d_interp", "unet2d_nobn", "unet3d_interp_nobn", "unet3d_odd"})
    expect_matches_pytorch(name, std::make_shared<UNet>(configs().at(name)), true);
}

TEST(UNet, MakeModelTakesChannelsClassesAndWidth) {
  auto m = std::dynamic_pointer_cast<UNet>(
      make_model("unet3d@0.25", ModelOptions{.num_classes = 3, .in_channels = 2}));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->config().dims, 3);
  EXPECT_EQ(m->config().in_channels, 2);
  EXPECT_EQ(m->config().num_classes, 3);
  EXPECT_EQ(m->config().base_width, 8);
  auto m2 = std::dynamic_pointer_cast<UNet>(make_model("unet2d@0.125", 5));
  ASSERT_TRUE(m2);
  EXPECT_EQ(m2->config().num_classes, 5);
  EXPECT_EQ(m2->config().in_channels, 3);
  EXPECT_EQ(m2->config().base_width, 8);
}

// The twin's values: weights copied in, the same input, the output and the input's gradient.
TEST(UNet, ForwardAndBackwardMatchPyTorch) {
  rg::testing::Fixture f("unet");
  for (const char* name : {"unet2d_interp", "unet3d_odd"}) {
    SCOPED_TRACE(name);
    const std::string n = name;
    UNet model(configs().at(name));
    model.to(DType::f64);  // the twin ran in f64
    std::map<std::string, Tensor> state;
    for (const auto& [key, _] : model.state_dict()) state[key] = f[n + ".state." + key];
    model.load_state_dict(state);
    Tensor x = f[n + ".x"].set_requires_grad(true);
    Tensor y = model.forward(x);  // train mode: batch statistics, as the twin
    EXPECT_TRUE(rg::testing::all_close(y, f[n + ".y"], 1e-10, 1e-10));
    y.backward(f[n + ".gy"]);
    EXPECT_TRUE(rg::testing::all_close(x.grad(), f[n + ".gx"], 1e-10, 1e-10));
    // The running statistics moved as PyTorch's did.
    const auto after = model.state_dict();
    EXPECT_TRUE(rg::testing::all_close(after.at("inc.double_conv.1.running_var"),
                                       f[n + ".running_var"], 1e-12, 1e-12));
  }
}

TEST(UNet, TinyForwardBackwardGivesEveryParameterAGradient) {
  for (int64_t dims : {2, 3})
    for (UNetDecoder decoder : {UNetDecoder::transposed_conv, UNetDecoder::interpolate}) {
      SCOPED_TRACE(std::to_string(dims) + "-D decoder " + std::to_string(int(decoder)));
      manual_seed(3);
      UNet model({.dims = dims,
                  .in_channels = 1,
                  .num_classes = 2,
                  .depth = 2,
                  .base_width = 4,
                  .decoder = decoder});
      const Shape shape = dims == 2 ? Shape{2, 1, 9, 12} : Shape{2, 1, 5, 6, 4};
      Tensor x = randn(shape).set_requires_grad(true);
      Tensor y = model.forward(x);
      Shape expected = shape;
      expected[1] = 2;
      EXPECT_EQ(y.shape(), expected);
      sum(mul(y, y)).backward();
      for (const auto& [key, p] : model.named_parameters()) {
        ASSERT_TRUE(p.grad().defined()) << key;
      }
      EXPECT_EQ(x.grad().shape(), shape);
    }
}

TEST(UNet, BadInputAndOptions) {
  UNet model({.dims = 2, .in_channels = 1, .num_classes = 2, .depth = 2, .base_width = 4});
  EXPECT_TRUE(throws_error(
      [&] {
        model.forward(ones({1, 3, 8, 8}));
      },
      {"UNet", "(N, 1, H, W)", "[1, 3, 8, 8]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        model.forward(ones({1, 1, 8, 8, 8}));
      },
      {"UNet", "(N, 1, H, W)", "[1, 1, 8, 8, 8]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        model.forward(ones({1, 1, 3, 8}));
      },
      {"UNet", "at least 2^depth = 4", "[1, 1, 3, 8]"}));
  EXPECT_TRUE(throws_error([] { UNet({.dims = 4}); }, {"UNet", "dims must be 2 or 3", "4"}));
  EXPECT_TRUE(throws_error([] { UNet({.depth = 0}); }, {"UNet", "depth", "0"}));
  EXPECT_TRUE(throws_error([] { UNet({.base_width = 5}); }, {"UNet", "base_width", "even", "5"}));
  EXPECT_TRUE(throws_error([] { UNet({.num_classes = 0}); }, {"UNet", "num_classes", "0"}));
  EXPECT_TRUE(throws_error([] { make_model("resnet18", ModelOptions{.in_channels = 1}); },
                           {"resnet18", "in_channels 3", "1"}));
  EXPECT_TRUE(throws_error([] { make_model("unet4d"); }, {"unknown model 'unet4d'", "unet3d"}));
  auto up = std::make_shared<UNetUp>(2, 8, 4, UNetDecoder::transposed_conv, UNetNorm::none);
  EXPECT_TRUE(throws_error([&] { up->forward(ones({1, 8, 2, 2})); }, {"Up", "two inputs"}));
}

}  // namespace
}  // namespace rg::nn
