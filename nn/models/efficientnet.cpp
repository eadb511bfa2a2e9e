#include "nn/models/efficientnet.h"

#include <numeric>

namespace rg::nn {

Tensor drop_connect(const Tensor& x, double p, Mode mode) {
  RG_CHECK(p >= 0 && p < 1, "drop_connect: p must be in [0, 1), got ", p);
  if (mode == Mode::eval || p == 0) return x;
  const Tensor keep =
      dropout(ones({x.size(0), 1, 1, 1}, {.dtype = x.dtype(), .device = x.device()}), p,
              DropoutMode::train);
  return x * keep;
}

EfficientNetBlock::EfficientNetBlock(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                     int64_t expansion, double se_ratio, double drop_rate)
    : expansion_(expansion), residual_(stride == 1 && in == out), drop_rate_(drop_rate) {
  RG_CHECK(kernel == 3 || kernel == 5, "EfficientNet: depthwise kernels are 3 or 5, got ", kernel);
  const int64_t channels = expansion * in;
  conv1_ = conv_1x1(in, channels);
  bn1_ = std::make_shared<BatchNorm2d>(channels);
  // Padding 1 for 3x3, 2 for 5x5: conv_kxk's (k − 1) / 2.
  conv2_ = conv_kxk(channels, channels, kernel, stride, channels);
  bn2_ = std::make_shared<BatchNorm2d>(channels);
  se_ = std::make_shared<SqueezeExcitation>(
      channels, static_cast<int64_t>(static_cast<double>(in) * se_ratio), Gate::swish);
  conv3_ = conv_1x1(channels, out);
  bn3_ = std::make_shared<BatchNorm2d>(out);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
  register_module("se", &se_);
  register_module("conv3", &conv3_);
  register_module("bn3", &bn3_);
  if (expansion == 1) {
    for (Tensor* t : {&conv1_->weight_, &bn1_->weight_, &bn1_->bias_}) t->set_requires_grad(false);
  }
}

Tensor EfficientNetBlock::forward(const Tensor& x) {
  Tensor y = expansion_ == 1 ? x : silu(bn1_->forward(conv1_->forward(x)));
  y = silu(bn2_->forward(conv2_->forward(y)));
  y = bn3_->forward(conv3_->forward(se_->forward(y)));
  if (!residual_) return y;
  return drop_connect(y, drop_rate_, is_training() ? Mode::train : Mode::eval) + x;
}

EfficientNet::EfficientNet(const EfficientNetConfig& c) : dropout_rate_(c.dropout_rate) {
  const std::size_t stages = c.blocks.size();
  RG_CHECK(stages > 0 && c.expansion.size() == stages && c.out_channels.size() == stages &&
               c.kernel_size.size() == stages && c.stride.size() == stages,
           "EfficientNet: blocks, expansion, out_channels, kernel_size and stride must list the "
           "same stages");
  RG_CHECK(c.dropout_rate >= 0 && c.dropout_rate < 1 && c.drop_connect_rate >= 0 &&
               c.drop_connect_rate < 1,
           "EfficientNet: dropout_rate and drop_connect_rate must be in [0, 1)");
  conv1_ = conv_kxk(3, 32, 3);
  bn1_ = std::make_shared<BatchNorm2d>(32);
  layers_ = std::make_shared<Sequential>();
  const int64_t total = std::accumulate(c.blocks.begin(), c.blocks.end(), int64_t{0});
  int64_t in = 32, b = 0;
  for (std::size_t s = 0; s < stages; ++s) {
    for (int64_t i = 0; i < c.blocks[s]; ++i, ++b) {
      const double rate =
          c.drop_connect == DropConnect::linear
              ? c.drop_connect_rate * static_cast<double>(b) / static_cast<double>(total)
              : 0.0;  // pytorch-cifar's b stays 0
      layers_->push_back(std::make_shared<EfficientNetBlock>(
          in, c.out_channels[s], c.kernel_size[s], i == 0 ? c.stride[s] : 1, c.expansion[s], 0.25,
          rate));
      in = c.out_channels[s];
    }
  }
  linear_ = std::make_shared<Linear>(in, c.num_classes);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("layers", &layers_);
  register_module("linear", &linear_);
}

Tensor EfficientNet::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "EfficientNet: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = silu(bn1_->forward(conv1_->forward(x)));
  y = adaptive_avg_pool2d(layers_->forward(y), {1, 1}).flatten(1);
  y = dropout(y, dropout_rate_, is_training() ? DropoutMode::train : DropoutMode::eval);
  return linear_->forward(y);
}

}  // namespace rg::nn
