#include "nn/models/regnet.h"

namespace rg::nn {

RegNetConfig regnetx_200mf_config(int64_t num_classes) {
  return {.depths = {1, 1, 4, 7},
          .widths = {24, 56, 152, 368},
          .strides = {1, 1, 2, 2},
          .group_width = 8,
          .num_classes = num_classes};
}

RegNetConfig regnetx_400mf_config(int64_t num_classes) {
  return {.depths = {1, 2, 7, 12},
          .widths = {32, 64, 160, 384},
          .strides = {1, 1, 2, 2},
          .group_width = 16,
          .num_classes = num_classes};
}

RegNetConfig regnety_400mf_config(int64_t num_classes) {
  RegNetConfig c = regnetx_400mf_config(num_classes);
  c.se_ratio = 0.25;
  return c;
}

RegNetBlock::RegNetBlock(int64_t in, int64_t out, int64_t stride, const RegNetConfig& config) {
  const int64_t bottleneck = round_half_even(static_cast<double>(out) * config.bottleneck_ratio);
  RG_CHECK(bottleneck % config.group_width == 0, "RegNet: a block of ", bottleneck,
           " channels does not split into groups of ", config.group_width);
  conv1_ = conv_1x1(in, bottleneck);
  bn1_ = std::make_shared<BatchNorm2d>(bottleneck);
  conv2_ = conv_kxk(bottleneck, bottleneck, 3, stride, bottleneck / config.group_width);
  bn2_ = std::make_shared<BatchNorm2d>(bottleneck);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
  if (config.se_ratio > 0) {
    // Sized by the block's input, not its bottleneck (pytorch-cifar's w_se).
    se_ = std::make_shared<SqueezeExcitation>(
        bottleneck, round_half_even(static_cast<double>(in) * config.se_ratio), Gate::relu);
    register_module("se", &se_);
  }
  conv3_ = conv_1x1(bottleneck, out);
  bn3_ = std::make_shared<BatchNorm2d>(out);
  shortcut_ = std::make_shared<Sequential>();
  if (stride != 1 || in != out) {
    shortcut_->push_back(conv_1x1(in, out, stride));
    shortcut_->push_back(std::make_shared<BatchNorm2d>(out));
  }
  register_module("conv3", &conv3_);
  register_module("bn3", &bn3_);
  register_module("shortcut", &shortcut_);
}

Tensor RegNetBlock::forward(const Tensor& x) {
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
  y = bn2_->forward_relu(conv2_->forward(y));
  if (se_) y = se_->forward(y);
  y = bn3_->forward(conv3_->forward(y));
  return add_relu(y, shortcut_->size() ? shortcut_->forward(x) : x);
}

RegNet::RegNet(const RegNetConfig& config) {
  RG_CHECK(config.depths.size() == 4 && config.widths.size() == 4 && config.strides.size() == 4,
           "RegNet: expected four stages of depths, widths and strides");
  conv1_ = conv_kxk(3, 64, 3);
  bn1_ = std::make_shared<BatchNorm2d>(64);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  int64_t in = 64;
  for (std::size_t s = 0; s < 4; ++s) {
    auto stage = std::make_shared<Sequential>();
    for (int64_t b = 0; b < config.depths[s]; ++b) {
      stage->push_back(std::make_shared<RegNetBlock>(in, config.widths[s],
                                                     b == 0 ? config.strides[s] : 1, config));
      in = config.widths[s];
    }
    stages_.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  linear_ = register_module("linear", std::make_shared<Linear>(in, config.num_classes));
}

Tensor RegNet::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "RegNet: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
  for (auto& stage : stages_) y = stage->forward(y);
  return linear_->forward(adaptive_avg_pool2d(y, {1, 1}).flatten(1));
}

}  // namespace rg::nn
