#include "nn/models/densenet.h"

#include <cmath>

namespace rg::nn {

DenseBottleneck::DenseBottleneck(int64_t in, int64_t growth_rate) {
  bn1_ = std::make_shared<BatchNorm2d>(in);
  conv1_ = conv_1x1(in, 4 * growth_rate);
  bn2_ = std::make_shared<BatchNorm2d>(4 * growth_rate);
  conv2_ = conv_kxk(4 * growth_rate, growth_rate, 3);
  register_module("bn1", &bn1_);
  register_module("conv1", &conv1_);
  register_module("bn2", &bn2_);
  register_module("conv2", &conv2_);
}

Tensor DenseBottleneck::forward(const Tensor& x) {
  Tensor y = conv1_->forward(bn1_->forward_relu(x));
  y = conv2_->forward(bn2_->forward_relu(y));
  return cat({y, x}, 1);  // the new features first, as pytorch-cifar
}

DenseTransition::DenseTransition(int64_t in, int64_t out) {
  bn_ = std::make_shared<BatchNorm2d>(in);
  conv_ = conv_1x1(in, out);
  register_module("bn", &bn_);
  register_module("conv", &conv_);
}

Tensor DenseTransition::forward(const Tensor& x) {
  return avg_pool2d(conv_->forward(bn_->forward_relu(x)), 2);
}

DenseNet::DenseNet(const DenseNetConfig& config) {
  RG_CHECK(config.blocks.size() == 4 && config.growth_rate > 0,
           "DenseNet: expected four dense stages and a positive growth rate");
  const int64_t k = config.growth_rate;
  int64_t planes = 2 * k;
  conv1_ = conv_kxk(3, planes, 3);
  register_module("conv1", &conv1_);
  for (std::size_t s = 0; s < 4; ++s) {
    auto stage = std::make_shared<Sequential>();
    for (int64_t b = 0; b < config.blocks[s]; ++b) {
      stage->push_back(std::make_shared<DenseBottleneck>(planes, k));
      planes += k;
    }
    dense_.push_back(register_module("dense" + std::to_string(s + 1), stage));
    if (s == 3) break;
    const auto out =
        static_cast<int64_t>(std::floor(static_cast<double>(planes) * config.reduction));
    trans_.push_back(register_module("trans" + std::to_string(s + 1),
                                     std::make_shared<DenseTransition>(planes, out)));
    planes = out;
  }
  bn_ = std::make_shared<BatchNorm2d>(planes);
  register_module("bn", &bn_);
  linear_ = register_module("linear", std::make_shared<Linear>(planes, config.num_classes));
}

Tensor DenseNet::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "DenseNet: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = conv1_->forward(x);
  for (std::size_t s = 0; s < 3; ++s) y = trans_[s]->forward(dense_[s]->forward(y));
  y = bn_->forward_relu(dense_[3]->forward(y));
  return linear_->forward(avg_pool2d(y, 4).flatten(1));
}

DenseNetConfig densenet121_config(int64_t num_classes) {
  return {{6, 12, 24, 16}, 32, 0.5, num_classes};
}
DenseNetConfig densenet161_config(int64_t num_classes) {
  return {{6, 12, 36, 24}, 48, 0.5, num_classes};
}
DenseNetConfig densenet169_config(int64_t num_classes) {
  return {{6, 12, 32, 32}, 32, 0.5, num_classes};
}
DenseNetConfig densenet201_config(int64_t num_classes) {
  return {{6, 12, 48, 32}, 32, 0.5, num_classes};
}
DenseNetConfig densenet_cifar_config(int64_t num_classes) {
  return {{6, 12, 24, 16}, 12, 0.5, num_classes};
}

}  // namespace rg::nn
