#include "nn/models/resnet.h"

#include <cmath>

namespace rg::nn {

namespace {
std::shared_ptr<Conv2d> conv3x3(int64_t in, int64_t out, int64_t stride) {
  return std::make_shared<Conv2d>(
      in, out, Size2{3, 3},
      Conv2dOptions{.stride = {stride, stride}, .padding = {1, 1}, .bias = Bias::without});
}

std::shared_ptr<Conv2d> conv1x1(int64_t in, int64_t out, int64_t stride) {
  return std::make_shared<Conv2d>(in, out, Size2{1, 1},
                                  Conv2dOptions{.stride = {stride, stride}, .bias = Bias::without});
}

// Projection (1x1 conv + BN) where the shape changes, else empty (identity).
std::shared_ptr<Sequential> projection_shortcut(int64_t in, int64_t out, int64_t stride) {
  auto shortcut = std::make_shared<Sequential>();
  if (stride != 1 || in != out) {
    shortcut->push_back(conv1x1(in, out, stride));
    shortcut->push_back(std::make_shared<BatchNorm2d>(out));
  }
  return shortcut;
}
}  // namespace

BasicBlock::BasicBlock(int64_t in, int64_t out, int64_t stride) {
  // By address, so that convert_sync_batchnorm can swap the BatchNorms (Module::replace_child).
  conv1_ = conv3x3(in, out, stride);
  bn1_ = std::make_shared<BatchNorm2d>(out);
  conv2_ = conv3x3(out, out, 1);
  bn2_ = std::make_shared<BatchNorm2d>(out);
  shortcut_ = projection_shortcut(in, out, stride);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
  register_module("shortcut", &shortcut_);
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
  y = bn2_->forward(conv2_->forward(y));
  return add_relu(y, shortcut_->size() ? shortcut_->forward(x) : x);
}

Bottleneck::Bottleneck(int64_t in, int64_t width, int64_t stride) {
  const int64_t out = expansion * width;
  conv1_ = conv1x1(in, width, 1);
  bn1_ = std::make_shared<BatchNorm2d>(width);
  conv2_ = conv3x3(width, width, stride);
  bn2_ = std::make_shared<BatchNorm2d>(width);
  conv3_ = conv1x1(width, out, 1);
  bn3_ = std::make_shared<BatchNorm2d>(out);
  shortcut_ = projection_shortcut(in, out, stride);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
  register_module("conv3", &conv3_);
  register_module("bn3", &bn3_);
  register_module("shortcut", &shortcut_);
}

Tensor Bottleneck::forward(const Tensor& x) {
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
  y = bn2_->forward_relu(conv2_->forward(y));
  y = bn3_->forward(conv3_->forward(y));
  return add_relu(y, shortcut_->size() ? shortcut_->forward(x) : x);
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
    const int64_t width = scaled(config.widths[s]);
    for (int64_t b = 0; b < config.blocks[s]; ++b) {
      const int64_t stride = b == 0 && s > 0 ? 2 : 1;
      if (config.block == ResNetBlock::basic) {
        stage->push_back(std::make_shared<BasicBlock>(in, width, stride));
        in = width;
      } else {
        stage->push_back(std::make_shared<Bottleneck>(in, width, stride));
        in = Bottleneck::expansion * width;
      }
    }
    stages_.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  linear_ = register_module("linear", std::make_shared<Linear>(in, config.num_classes));
}

Tensor ResNet::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "ResNet: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
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

ResNetConfig resnet34_config(int64_t num_classes, double width_multiplier) {
  return {{3, 4, 6, 3}, {64, 128, 256, 512}, 64, num_classes, width_multiplier};
}

ResNetConfig resnet50_config(int64_t num_classes, double width_multiplier) {
  return {{3, 4, 6, 3}, {64, 128, 256, 512}, 64,
          num_classes,  width_multiplier,    ResNetBlock::bottleneck};
}

ResNetConfig resnet101_config(int64_t num_classes, double width_multiplier) {
  return {{3, 4, 23, 3}, {64, 128, 256, 512}, 64,
          num_classes,   width_multiplier,    ResNetBlock::bottleneck};
}

ResNetConfig resnet152_config(int64_t num_classes, double width_multiplier) {
  return {{3, 8, 36, 3}, {64, 128, 256, 512}, 64,
          num_classes,   width_multiplier,    ResNetBlock::bottleneck};
}

}  // namespace rg::nn
