#pragma once
// ShuffleNetV2 for CIFAR-10 as in pytorch-cifar (kuangliu, models/shufflenetv2.py, after Ma et
// al. 2018): a 3x3 stem of 24 channels (no max-pool), three stages — a down-sampling block then
// basic blocks — a 1x1 conv to 1024 (2048 at size 2), a 4x4 average pool, linear.
//   basic block: split the channels in halves; the second goes 1x1-BN-ReLU, 3x3 depthwise-BN,
//                1x1-BN-ReLU; cat with the first half; channel shuffle in 2 groups.
//   down block:  two branches at stride 2 (3x3 depthwise-BN, 1x1-BN-ReLU | 1x1-BN-ReLU, 3x3
//                depthwise-BN, 1x1-BN-ReLU), each to half the output, cat, shuffle.
// net_size 0.5, 1, 1.5, 2 pick pytorch-cifar's configs; 1,263,854 parameters for size 1 and 10
// classes.

#include <memory>
#include <string>
#include <vector>

#include "nn/models/blocks.h"

namespace rg::nn {

class ShuffleV2Block : public Module {
 public:
  explicit ShuffleV2Block(int64_t channels);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "BasicBlock"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
};

class ShuffleV2DownBlock : public Module {
 public:
  ShuffleV2DownBlock(int64_t in, int64_t out);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "DownBlock"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_, conv4_, conv5_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_, bn4_, bn5_;
};

class ShuffleNetV2 : public Module {
 public:
  explicit ShuffleNetV2(double net_size = 1, int64_t num_classes = 10);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ShuffleNetV2"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::vector<std::shared_ptr<Sequential>> stages_;  // "layer1" .. "layer3"
  std::shared_ptr<Linear> linear_;
};

}  // namespace rg::nn
