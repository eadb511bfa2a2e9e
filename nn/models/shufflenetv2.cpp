#include "nn/models/shufflenetv2.h"

namespace rg::nn {

ShuffleV2Block::ShuffleV2Block(int64_t channels) {
  const int64_t half = channels / 2;  // pytorch-cifar's int(channels · 0.5)
  conv1_ = conv_1x1(half, half);
  bn1_ = std::make_shared<BatchNorm2d>(half);
  conv2_ = conv_kxk(half, half, 3, 1, half);
  bn2_ = std::make_shared<BatchNorm2d>(half);
  conv3_ = conv_1x1(half, half);
  bn3_ = std::make_shared<BatchNorm2d>(half);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
  register_module("conv3", &conv3_);
  register_module("bn3", &bn3_);
}

Tensor ShuffleV2Block::forward(const Tensor& x) {
  const int64_t c = x.size(1) / 2;
  const Tensor kept = x.narrow(1, 0, c);
  Tensor y = bn1_->forward_relu(conv1_->forward(x.narrow(1, c, x.size(1) - c)));
  y = bn2_->forward(conv2_->forward(y));
  y = bn3_->forward_relu(conv3_->forward(y));
  return channel_shuffle(cat({kept, y}, 1), 2);
}

ShuffleV2DownBlock::ShuffleV2DownBlock(int64_t in, int64_t out) {
  const int64_t mid = out / 2;
  conv1_ = conv_kxk(in, in, 3, 2, in);
  bn1_ = std::make_shared<BatchNorm2d>(in);
  conv2_ = conv_1x1(in, mid);
  bn2_ = std::make_shared<BatchNorm2d>(mid);
  conv3_ = conv_1x1(in, mid);
  bn3_ = std::make_shared<BatchNorm2d>(mid);
  conv4_ = conv_kxk(mid, mid, 3, 2, mid);
  bn4_ = std::make_shared<BatchNorm2d>(mid);
  conv5_ = conv_1x1(mid, mid);
  bn5_ = std::make_shared<BatchNorm2d>(mid);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
  register_module("conv3", &conv3_);
  register_module("bn3", &bn3_);
  register_module("conv4", &conv4_);
  register_module("bn4", &bn4_);
  register_module("conv5", &conv5_);
  register_module("bn5", &bn5_);
}

Tensor ShuffleV2DownBlock::forward(const Tensor& x) {
  Tensor left = bn1_->forward(conv1_->forward(x));
  left = bn2_->forward_relu(conv2_->forward(left));
  Tensor right = bn3_->forward_relu(conv3_->forward(x));
  right = bn4_->forward(conv4_->forward(right));
  right = bn5_->forward_relu(conv5_->forward(right));
  return channel_shuffle(cat({left, right}, 1), 2);
}

ShuffleNetV2::ShuffleNetV2(double net_size, int64_t num_classes) {
  struct Widths {
    double size;
    int64_t out[4];
  };
  const Widths configs[] = {{0.5, {48, 96, 192, 1024}},
                            {1, {116, 232, 464, 1024}},
                            {1.5, {176, 352, 704, 1024}},
                            {2, {224, 488, 976, 2048}}};
  const Widths* w = nullptr;
  for (const Widths& c : configs)
    if (c.size == net_size) w = &c;
  RG_CHECK(w != nullptr, "ShuffleNetV2: net_size is 0.5, 1, 1.5 or 2 (pytorch-cifar's), got ",
           net_size);
  const int64_t blocks[] = {3, 7, 3};
  conv1_ = conv_kxk(3, 24, 3);
  bn1_ = std::make_shared<BatchNorm2d>(24);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  int64_t in = 24;
  for (std::size_t s = 0; s < 3; ++s) {
    auto stage = std::make_shared<Sequential>();
    stage->push_back(std::make_shared<ShuffleV2DownBlock>(in, w->out[s]));
    for (int64_t b = 0; b < blocks[s]; ++b)
      stage->push_back(std::make_shared<ShuffleV2Block>(w->out[s]));
    in = w->out[s];
    stages_.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  conv2_ = conv_1x1(in, w->out[3]);
  bn2_ = std::make_shared<BatchNorm2d>(w->out[3]);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
  linear_ = register_module("linear", std::make_shared<Linear>(w->out[3], num_classes));
}

Tensor ShuffleNetV2::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "ShuffleNetV2: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
  for (auto& stage : stages_) y = stage->forward(y);
  y = bn2_->forward_relu(conv2_->forward(y));
  return linear_->forward(avg_pool2d(y, 4).flatten(1));
}

}  // namespace rg::nn
