#pragma once
// Pre-activation ResNet18 for CIFAR-10 as in pytorch-cifar (kuangliu, models/preact_resnet.py,
// after He et al. 2016, "Identity Mappings in Deep Residual Networks"): a 3x3 stem conv with no
// BN or ReLU after it, four stages of two PreActBlocks at widths 64..512 (strides 1, 2, 2, 2),
// then — as in pytorch-cifar, without a final BN+ReLU — a 4x4 average pool and Linear 512 ->
// classes. 11,171,146 parameters for 10 classes. PreActResNet34 (PreActBlocks [3, 4, 6, 3]) and
// PreActResNet50/101/152 (PreActBottlenecks [3, 4, 6, 3], [3, 4, 23, 3], [3, 8, 36, 3]; output 4x
// the stage's width) as pytorch-cifar defines them too.

#include <memory>
#include <string>
#include <vector>

#include "nn/layers.h"

namespace rg::nn {

// x -> a = relu(bn1(x)) -> conv1 -> relu(bn2(.)) -> conv2 -> + shortcut, where shortcut is x,
// or a 1x1 conv of a (no BN) where the shape changes.
class PreActBlock : public Module {
 public:
  PreActBlock(int64_t in, int64_t out, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "PreActBlock"; }

 private:
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<Sequential> shortcut_;  // null (and unregistered, as in PyTorch): identity
};

// a = relu(bn1(x)) -> conv1 1x1 -> relu(bn2(.)) -> conv2 3x3 (stride) -> relu(bn3(.)) -> conv3 1x1
// to 4·width -> + shortcut (x, or a 1x1 conv of a where the shape changes).
class PreActBottleneck : public Module {
 public:
  static constexpr int64_t expansion = 4;
  PreActBottleneck(int64_t in, int64_t width, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "PreActBottleneck"; }

 private:
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<Sequential> shortcut_;  // null: identity
};

enum class PreActBlockKind { basic, bottleneck };

class PreActResNet : public Module {
 public:
  explicit PreActResNet(std::vector<int64_t> blocks = {2, 2, 2, 2}, int64_t num_classes = 10,
                        PreActBlockKind kind = PreActBlockKind::basic);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "PreActResNet"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::vector<std::shared_ptr<Sequential>> stages_;  // "layer1", ..., "layer4"
  std::shared_ptr<Linear> linear_;
};

}  // namespace rg::nn
