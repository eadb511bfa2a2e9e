#include "nn/models/mobilenetv2.h"

namespace rg::nn {

namespace {
std::shared_ptr<Conv2d> conv1x1(int64_t in, int64_t out) {
  return std::make_shared<Conv2d>(in, out, Size2{1, 1}, Conv2dOptions{.bias = Bias::without});
}

struct Stage {
  int64_t expansion, out, blocks, stride;
};
// pytorch-cifar's cfg; the second stage's stride is 1 (2 on ImageNet) for 32x32 inputs.
constexpr Stage kStages[] = {{1, 16, 1, 1}, {6, 24, 2, 1},  {6, 32, 3, 2}, {6, 64, 4, 2},
                             {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
}  // namespace

MobileNetV2Block::MobileNetV2Block(int64_t in, int64_t out, int64_t expansion, int64_t stride)
    : stride_(stride) {
  const int64_t hidden = expansion * in;
  conv1_ = conv1x1(in, hidden);
  bn1_ = std::make_shared<BatchNorm2d>(hidden);
  // Depthwise: one 3x3 filter per channel (groups == channels).
  conv2_ = std::make_shared<Conv2d>(
      hidden, hidden, Size2{3, 3},
      Conv2dOptions{
          .stride = {stride, stride}, .padding = {1, 1}, .groups = hidden, .bias = Bias::without});
  bn2_ = std::make_shared<BatchNorm2d>(hidden);
  conv3_ = conv1x1(hidden, out);
  bn3_ = std::make_shared<BatchNorm2d>(out);
  shortcut_ = std::make_shared<Sequential>();
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
  register_module("conv3", &conv3_);
  register_module("bn3", &bn3_);
  register_module("shortcut", &shortcut_);
  if (stride == 1 && in != out) {
    shortcut_->push_back(conv1x1(in, out));
    shortcut_->push_back(std::make_shared<BatchNorm2d>(out));
  }
}

Tensor MobileNetV2Block::forward(const Tensor& x) {
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
  y = bn2_->forward_relu(conv2_->forward(y));
  y = bn3_->forward(conv3_->forward(y));
  if (stride_ != 1) return y;
  return y + (shortcut_->size() ? shortcut_->forward(x) : x);
}

MobileNetV2::MobileNetV2(int64_t num_classes) {
  // conv1 at stride 1 (2 on ImageNet) for 32x32 inputs.
  conv1_ = std::make_shared<Conv2d>(3, 32, Size2{3, 3},
                                    Conv2dOptions{.padding = {1, 1}, .bias = Bias::without});
  bn1_ = std::make_shared<BatchNorm2d>(32);
  layers_ = std::make_shared<Sequential>();
  int64_t in = 32;
  for (const Stage& stage : kStages) {
    for (int64_t b = 0; b < stage.blocks; ++b) {
      layers_->push_back(std::make_shared<MobileNetV2Block>(in, stage.out, stage.expansion,
                                                            b == 0 ? stage.stride : 1));
      in = stage.out;
    }
  }
  conv2_ = conv1x1(in, 1280);
  bn2_ = std::make_shared<BatchNorm2d>(1280);
  linear_ = std::make_shared<Linear>(1280, num_classes);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("layers", &layers_);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
  register_module("linear", &linear_);
}

Tensor MobileNetV2::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "MobileNetV2: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
  y = bn2_->forward_relu(conv2_->forward(layers_->forward(y)));
  // (N, 1280, 4, 4) -> (N, 1280): pytorch-cifar's fixed 4x4 pool.
  return linear_->forward(avg_pool2d(y, 4).flatten(1));
}

}  // namespace rg::nn
