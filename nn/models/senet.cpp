#include "nn/models/senet.h"

namespace rg::nn {

SEPreActBlock::SEPreActBlock(int64_t in, int64_t out, int64_t stride) {
  RG_CHECK(out >= 16, "SENet: a block needs at least 16 channels for its C/16 gate, got ", out);
  bn1_ = std::make_shared<BatchNorm2d>(in);
  conv1_ = conv_kxk(in, out, 3, stride);
  bn2_ = std::make_shared<BatchNorm2d>(out);
  conv2_ = conv_kxk(out, out, 3);
  register_module("bn1", &bn1_);
  register_module("conv1", &conv1_);
  register_module("bn2", &bn2_);
  register_module("conv2", &conv2_);
  if (stride != 1 || in != out) {
    shortcut_ = std::make_shared<Sequential>();
    shortcut_->push_back(conv_1x1(in, out, stride));
    register_module("shortcut", &shortcut_);
  }
  fc1_ = conv_1x1(out, out / 16, 1, 1, Bias::with);
  fc2_ = conv_1x1(out / 16, out, 1, 1, Bias::with);
  register_module("fc1", &fc1_);
  register_module("fc2", &fc2_);
}

Tensor SEPreActBlock::forward(const Tensor& x) {
  const Tensor a = bn1_->forward_relu(x);
  const Tensor shortcut = shortcut_ ? shortcut_->forward(a) : x;
  Tensor y = conv2_->forward(bn2_->forward_relu(conv1_->forward(a)));
  return squeeze_excite(y, *fc1_, *fc2_) + shortcut;
}

SENet::SENet(std::vector<int64_t> blocks, int64_t num_classes) {
  RG_CHECK(blocks.size() == 4, "SENet: expected four stages, got ", blocks.size());
  conv1_ = conv_kxk(3, 64, 3);
  bn1_ = std::make_shared<BatchNorm2d>(64);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  int64_t in = 64;
  const int64_t widths[] = {64, 128, 256, 512};
  for (std::size_t s = 0; s < 4; ++s) {
    auto stage = std::make_shared<Sequential>();
    for (int64_t b = 0; b < blocks[s]; ++b) {
      stage->push_back(std::make_shared<SEPreActBlock>(in, widths[s], b == 0 && s > 0 ? 2 : 1));
      in = widths[s];
    }
    stages_.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  linear_ = register_module("linear", std::make_shared<Linear>(in, num_classes));
}

Tensor SENet::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "SENet: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
  for (auto& stage : stages_) y = stage->forward(y);
  return linear_->forward(avg_pool2d(y, 4).flatten(1));
}

}  // namespace rg::nn
