#include "nn/models/preact_resnet.h"

namespace rg::nn {

namespace {
std::shared_ptr<Conv2d> conv3x3(int64_t in, int64_t out, int64_t stride) {
  return std::make_shared<Conv2d>(
      in, out, Size2{3, 3},
      Conv2dOptions{.stride = {stride, stride}, .padding = {1, 1}, .bias = Bias::without});
}
}  // namespace

PreActBlock::PreActBlock(int64_t in, int64_t out, int64_t stride) {
  bn1_ = std::make_shared<BatchNorm2d>(in);
  conv1_ = conv3x3(in, out, stride);
  bn2_ = std::make_shared<BatchNorm2d>(out);
  conv2_ = conv3x3(out, out, 1);
  register_module("bn1", &bn1_);
  register_module("conv1", &conv1_);
  register_module("bn2", &bn2_);
  register_module("conv2", &conv2_);
  if (stride != 1 || in != out) {
    shortcut_ = std::make_shared<Sequential>();
    shortcut_->push_back(std::make_shared<Conv2d>(
        in, out, Size2{1, 1}, Conv2dOptions{.stride = {stride, stride}, .bias = Bias::without}));
    register_module("shortcut", &shortcut_);
  }
}

Tensor PreActBlock::forward(const Tensor& x) {
  Tensor a = bn1_->forward_relu(x);
  // The projection sees the activated input, the identity the raw one (pytorch-cifar).
  Tensor shortcut = shortcut_ ? shortcut_->forward(a) : x;
  Tensor y = conv1_->forward(a);
  y = conv2_->forward(bn2_->forward_relu(y));
  return y + shortcut;
}

PreActBottleneck::PreActBottleneck(int64_t in, int64_t width, int64_t stride) {
  const int64_t out = expansion * width;
  bn1_ = std::make_shared<BatchNorm2d>(in);
  conv1_ = std::make_shared<Conv2d>(in, width, Size2{1, 1}, Conv2dOptions{.bias = Bias::without});
  bn2_ = std::make_shared<BatchNorm2d>(width);
  conv2_ = conv3x3(width, width, stride);
  bn3_ = std::make_shared<BatchNorm2d>(width);
  conv3_ = std::make_shared<Conv2d>(width, out, Size2{1, 1}, Conv2dOptions{.bias = Bias::without});
  register_module("bn1", &bn1_);
  register_module("conv1", &conv1_);
  register_module("bn2", &bn2_);
  register_module("conv2", &conv2_);
  register_module("bn3", &bn3_);
  register_module("conv3", &conv3_);
  if (stride != 1 || in != out) {
    shortcut_ = std::make_shared<Sequential>();
    shortcut_->push_back(std::make_shared<Conv2d>(
        in, out, Size2{1, 1}, Conv2dOptions{.stride = {stride, stride}, .bias = Bias::without}));
    register_module("shortcut", &shortcut_);
  }
}

Tensor PreActBottleneck::forward(const Tensor& x) {
  Tensor a = bn1_->forward_relu(x);
  Tensor shortcut = shortcut_ ? shortcut_->forward(a) : x;
  Tensor y = conv1_->forward(a);
  y = conv2_->forward(bn2_->forward_relu(y));
  y = conv3_->forward(bn3_->forward_relu(y));
  return y + shortcut;
}

PreActResNet::PreActResNet(std::vector<int64_t> blocks, int64_t num_classes, PreActBlockKind kind) {
  RG_CHECK(blocks.size() == 4, "PreActResNet: expected four stages, got ", blocks.size());
  conv1_ = conv3x3(3, 64, 1);
  register_module("conv1", &conv1_);
  int64_t in = 64;
  const int64_t widths[] = {64, 128, 256, 512};
  for (std::size_t s = 0; s < blocks.size(); ++s) {
    auto stage = std::make_shared<Sequential>();
    for (int64_t b = 0; b < blocks[s]; ++b) {
      const int64_t stride = b == 0 && s > 0 ? 2 : 1;
      if (kind == PreActBlockKind::basic) {
        stage->push_back(std::make_shared<PreActBlock>(in, widths[s], stride));
        in = widths[s];
      } else {
        stage->push_back(std::make_shared<PreActBottleneck>(in, widths[s], stride));
        in = PreActBottleneck::expansion * widths[s];
      }
    }
    stages_.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  linear_ = register_module("linear", std::make_shared<Linear>(in, num_classes));
}

Tensor PreActResNet::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "PreActResNet: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = conv1_->forward(x);
  for (auto& stage : stages_) y = stage->forward(y);
  // (N, 512, 4, 4) -> (N, 512): pytorch-cifar's fixed 4x4 pool, not an adaptive one.
  return linear_->forward(avg_pool2d(y, 4).flatten(1));
}

}  // namespace rg::nn
