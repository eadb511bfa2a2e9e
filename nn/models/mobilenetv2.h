#pragma once
// MobileNetV2 for CIFAR-10 as in pytorch-cifar (kuangliu, models/mobilenetv2.py, after Sandler
// et al. 2018): the ImageNet net with conv1 and the second stage at stride 1 instead of 2, so
// 32x32 images reach the head at 4x4 (then a 4x4 average pool instead of 7x7). 2,296,922
// parameters for 10 classes.

#include <memory>
#include <string>

#include "nn/layers.h"

namespace rg::nn {

// Inverted residual (kuangliu's `Block`): x -> relu(bn1(conv1 1x1, in -> expansion·in))
//   -> relu(bn2(conv2 3x3 depthwise, stride)) -> bn3(conv3 1x1 -> out), no ReLU after the
// projection (the "linear bottleneck"). At stride 1 the shortcut is added: the identity, or a
// 1x1 conv + BN where the channels change; at stride 2 there is none.
class MobileNetV2Block : public Module {
 public:
  MobileNetV2Block(int64_t in, int64_t out, int64_t expansion, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MobileNetV2Block"; }

 private:
  int64_t stride_;
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<Sequential> shortcut_;  // empty: identity (at stride 1)
};

class MobileNetV2 : public Module {
 public:
  explicit MobileNetV2(int64_t num_classes = 10);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MobileNetV2"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<Sequential> layers_;
  std::shared_ptr<Linear> linear_;
};

}  // namespace rg::nn
