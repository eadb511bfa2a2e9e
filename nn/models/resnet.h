#pragma once
// ResNets for CIFAR-10 (32x32 inputs):
// - ResNet18 as in pytorch-cifar (kuangliu): a 3x3 stem conv, no max-pool, four stages of two
//   BasicBlocks at widths 64, 128, 256, 512 (strides 1, 2, 2, 2), global average pool, linear.
//   11,173,962 parameters — the count PyTorch gives for the same definition.
// - ResNet-20 as in He et al. 2016 §4.2: three stages of three BasicBlocks at widths 16, 32,
//   64; projection (1x1 conv + BN) shortcuts where the shape changes ("option B").
// - ResNet34 (BasicBlocks [3, 4, 6, 3]), ResNet50, ResNet101 and ResNet152 (Bottlenecks
//   [3, 4, 6, 3], [3, 4, 23, 3] and [3, 8, 36, 3]) as in pytorch-cifar: the same stem and stages; a
//   Bottleneck's output has 4x its stage's width.
// A width multiplier scales every stage's channels (ResNet18 at 0.5 has widths 32..256).
// Parameter names follow pytorch-cifar, so its checkpoints' keys match ours.

#include <memory>
#include <string>
#include <vector>

#include "nn/layers.h"

namespace rg::nn {

// x -> relu(bn1(conv1(x))) -> bn2(conv2(.)) -> + shortcut(x) -> relu.
class BasicBlock : public Module {
 public:
  BasicBlock(int64_t in, int64_t out, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "BasicBlock"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<Sequential> shortcut_;  // empty: identity
};

// x -> relu(bn1(conv1 1x1)) -> relu(bn2(conv2 3x3, stride)) -> bn3(conv3 1x1 to 4·width)
//   -> + shortcut(x) -> relu. The stride sits on the 3x3 conv, as in pytorch-cifar.
class Bottleneck : public Module {
 public:
  static constexpr int64_t expansion = 4;
  Bottleneck(int64_t in, int64_t width, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Bottleneck"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<Sequential> shortcut_;  // empty: identity
};

enum class ResNetBlock { basic, bottleneck };

struct ResNetConfig {
  std::vector<int64_t> blocks;  // per stage
  std::vector<int64_t> widths;  // per stage, before the multiplier
  int64_t stem_width = 64;
  int64_t num_classes = 10;
  double width_multiplier = 1.0;
  ResNetBlock block = ResNetBlock::basic;
};

class ResNet : public Module {
 public:
  explicit ResNet(const ResNetConfig& config);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ResNet"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::vector<std::shared_ptr<Sequential>> stages_;  // "layer1", "layer2", ...
  std::shared_ptr<Linear> linear_;
};

ResNetConfig resnet18_config(int64_t num_classes = 10, double width_multiplier = 1.0);
ResNetConfig resnet20_config(int64_t num_classes = 10, double width_multiplier = 1.0);
ResNetConfig resnet34_config(int64_t num_classes = 10, double width_multiplier = 1.0);
ResNetConfig resnet50_config(int64_t num_classes = 10, double width_multiplier = 1.0);
ResNetConfig resnet101_config(int64_t num_classes = 10, double width_multiplier = 1.0);
ResNetConfig resnet152_config(int64_t num_classes = 10, double width_multiplier = 1.0);

}  // namespace rg::nn
