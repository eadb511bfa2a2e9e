#pragma once
// SENet18 for CIFAR-10 as in pytorch-cifar (kuangliu, models/senet.py, after Hu et al. 2018): the
// stem of ResNet18 (3x3 conv, BN, ReLU), four stages of two pre-activation blocks with a
// squeeze-and-excitation gate on the residual branch (fc1, fc2: 1x1 convolutions with bias, C/16
// channels between), a 4x4 average pool, linear. 11,260,354 parameters for 10 classes.

#include <memory>
#include <string>
#include <vector>

#include "nn/models/blocks.h"

namespace rg::nn {

// a = relu(bn1(x)); y = conv2(relu(bn2(conv1(a)))); y = y · sigmoid(fc2(relu(fc1(avg(y)))));
// return y + shortcut, shortcut = x, or a 1x1 conv of a (no BN) where the shape changes.
class SEPreActBlock : public Module {
 public:
  SEPreActBlock(int64_t in, int64_t out, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "PreActBlock"; }

 private:
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<Conv2d> conv1_, conv2_, fc1_, fc2_;
  std::shared_ptr<Sequential> shortcut_;  // null (and unregistered, as in PyTorch): identity
};

class SENet : public Module {
 public:
  explicit SENet(std::vector<int64_t> blocks = {2, 2, 2, 2}, int64_t num_classes = 10);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "SENet"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::vector<std::shared_ptr<Sequential>> stages_;  // "layer1" .. "layer4"
  std::shared_ptr<Linear> linear_;
};

}  // namespace rg::nn
