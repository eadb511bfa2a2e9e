#include "nn/models/resnet.h"

#include <cmath>

#include "nn/models/airbench.h"

namespace rg::nn {

namespace {
std::shared_ptr<Conv2d> conv3x3(int64_t in, int64_t out, int64_t stride) {
  return std::make_shared<Conv2d>(
      in, out, Size2{3, 3},
      Conv2dOptions{.stride = {stride, stride}, .padding = {1, 1}, .bias = Bias::without});
}
}  // namespace

BasicBlock::BasicBlock(int64_t in, int64_t out, int64_t stride) {
  // By address, so that convert_sync_batchnorm can swap the BatchNorms (Module::replace_child).
  conv1_ = conv3x3(in, out, stride);
  bn1_ = std::make_shared<BatchNorm2d>(out);
  conv2_ = conv3x3(out, out, 1);
  bn2_ = std::make_shared<BatchNorm2d>(out);
  shortcut_ = std::make_shared<Sequential>();
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
  register_module("shortcut", &shortcut_);
  if (stride != 1 || in != out) {
    shortcut_->push_back(std::make_shared<Conv2d>(
        in, out, Size2{1, 1}, Conv2dOptions{.stride = {stride, stride}, .bias = Bias::without}));
    shortcut_->push_back(std::make_shared<BatchNorm2d>(out));
  }
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor y = relu(bn1_->forward(conv1_->forward(x)));
  y = bn2_->forward(conv2_->forward(y));
  return relu(y + (shortcut_->size() ? shortcut_->forward(x) : x));
}

ResNet::ResNet(const ResNetConfig& config) {
  RG_CHECK(config.blocks.size() == config.widths.size() && !config.blocks.empty(),
           "ResNet: blocks and widths must list the same, non-zero number of stages");
  RG_CHECK(config.width_multiplier > 0, "ResNet: width multiplier must be positive, got ",
           config.width_multiplier);
  auto scaled = [&](int64_t w) {
    return std::max<int64_t>(
        1, static_cast<int64_t>(std::lround(static_cast<double>(w) * config.width_multiplier)));
  };
  int64_t in = scaled(config.stem_width);
  conv1_ = conv3x3(3, in, 1);
  bn1_ = std::make_shared<BatchNorm2d>(in);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  for (std::size_t s = 0; s < config.blocks.size(); ++s) {
    auto stage = std::make_shared<Sequential>();
    const int64_t out = scaled(config.widths[s]);
    for (int64_t b = 0; b < config.blocks[s]; ++b) {
      stage->push_back(std::make_shared<BasicBlock>(in, out, b == 0 && s > 0 ? 2 : 1));
      in = out;
    }
    stages_.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  linear_ = register_module("linear", std::make_shared<Linear>(in, config.num_classes));
}

Tensor ResNet::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "ResNet: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = relu(bn1_->forward(conv1_->forward(x)));
  for (auto& stage : stages_) y = stage->forward(y);
  y = adaptive_avg_pool2d(y, {1, 1}).flatten(1);
  return linear_->forward(y);
}

ResNetConfig resnet18_config(int64_t num_classes, double width_multiplier) {
  return {{2, 2, 2, 2}, {64, 128, 256, 512}, 64, num_classes, width_multiplier};
}

ResNetConfig resnet20_config(int64_t num_classes, double width_multiplier) {
  return {{3, 3, 3}, {16, 32, 64}, 16, num_classes, width_multiplier};
}

std::vector<std::string> model_names() {
  return {"resnet18", "resnet20"};
}

std::shared_ptr<Module> make_model(const std::string& name, int64_t num_classes) {
  std::string base = name;
  double width = 1.0;
  if (auto at = name.find('@'); at != std::string::npos) {
    base = name.substr(0, at);
    try {
      std::size_t used = 0;
      width = std::stod(name.substr(at + 1), &used);
      if (used != name.size() - at - 1) width = -1;
    } catch (const std::exception&) {
      width = -1;
    }
    RG_CHECK(width > 0, "model '", name,
             "': the width multiplier after '@' must be a positive number");
  }
  if (base == "resnet18") return std::make_shared<ResNet>(resnet18_config(num_classes, width));
  if (base == "resnet20") return std::make_shared<ResNet>(resnet20_config(num_classes, width));
  if (base == "airbench") return std::make_shared<Airbench>(num_classes, width);
  fail("unknown model '", name,
       "' (known: airbench, resnet18, resnet20; append @<width> for a width "
       "multiplier, e.g. resnet18@0.5)");
}

}  // namespace rg::nn
