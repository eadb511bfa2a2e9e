#include "nn/models/resnext.h"

namespace rg::nn {

ResNeXtBlock::ResNeXtBlock(int64_t in, int64_t cardinality, int64_t bottleneck_width,
                           int64_t stride) {
  const int64_t group_width = cardinality * bottleneck_width;
  const int64_t out = expansion * group_width;
  conv1_ = conv_1x1(in, group_width);
  bn1_ = std::make_shared<BatchNorm2d>(group_width);
  conv2_ = conv_kxk(group_width, group_width, 3, stride, cardinality);
  bn2_ = std::make_shared<BatchNorm2d>(group_width);
  conv3_ = conv_1x1(group_width, out);
  bn3_ = std::make_shared<BatchNorm2d>(out);
  shortcut_ = std::make_shared<Sequential>();
  if (stride != 1 || in != out) {
    shortcut_->push_back(conv_1x1(in, out, stride));
    shortcut_->push_back(std::make_shared<BatchNorm2d>(out));
  }
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
  register_module("conv3", &conv3_);
  register_module("bn3", &bn3_);
  register_module("shortcut", &shortcut_);
}

Tensor ResNeXtBlock::forward(const Tensor& x) {
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
  y = bn2_->forward_relu(conv2_->forward(y));
  y = bn3_->forward(conv3_->forward(y));
  return add_relu(y, shortcut_->size() ? shortcut_->forward(x) : x);
}

ResNeXt::ResNeXt(const ResNeXtConfig& config) {
  RG_CHECK(!config.blocks.empty() && config.cardinality > 0 && config.bottleneck_width > 0,
           "ResNeXt: needs stages, a positive cardinality and bottleneck width");
  conv1_ = conv_1x1(3, 64);  // pytorch-cifar's stem is 1x1
  bn1_ = std::make_shared<BatchNorm2d>(64);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  int64_t in = 64, width = config.bottleneck_width;
  for (std::size_t s = 0; s < config.blocks.size(); ++s) {
    auto stage = std::make_shared<Sequential>();
    for (int64_t b = 0; b < config.blocks[s]; ++b) {
      const int64_t stride = b == 0 && s > 0 ? 2 : 1;
      stage->push_back(std::make_shared<ResNeXtBlock>(in, config.cardinality, width, stride));
      in = ResNeXtBlock::expansion * config.cardinality * width;
    }
    width *= 2;
    stages_.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  linear_ = register_module("linear", std::make_shared<Linear>(in, config.num_classes));
}

Tensor ResNeXt::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "ResNeXt: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
  for (auto& stage : stages_) y = stage->forward(y);
  // (N, 1024, 8, 8) -> (N, 1024): pytorch-cifar's fixed 8x8 pool.
  return linear_->forward(avg_pool2d(y, 8).flatten(1));
}

}  // namespace rg::nn
