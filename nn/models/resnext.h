#pragma once
// ResNeXt-29 for CIFAR-10 as in pytorch-cifar (kuangliu, models/resnext.py, after Xie et al.
// 2017): a 1x1 stem of 64 channels (not 3x3), three stages of three blocks (strides 1, 2, 2),
// each block a 1x1 to C·d channels, a 3x3 grouped into C (the cardinality) groups of d, and a
// 1x1 to twice that; d doubles after every stage; an 8x8 average pool, linear. "32x4d" is C = 32,
// d = 4. Parameters for 10 classes: 2x64d 9,128,778; 32x4d 4,774,218; 4x64d 27,104,586;
// 8x64d 89,598,282.

#include <memory>
#include <string>
#include <vector>

#include "nn/models/blocks.h"

namespace rg::nn {

struct ResNeXtConfig {
  std::vector<int64_t> blocks = {3, 3, 3};
  int64_t cardinality = 32;
  int64_t bottleneck_width = 4;  // d of the first stage
  int64_t num_classes = 10;
};

// x -> relu(bn1(conv1 1x1)) -> relu(bn2(conv2 3x3, C groups, stride)) -> bn3(conv3 1x1 to 2·C·d)
//   -> + shortcut(x) -> relu.
class ResNeXtBlock : public Module {
 public:
  static constexpr int64_t expansion = 2;
  ResNeXtBlock(int64_t in, int64_t cardinality, int64_t bottleneck_width, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Block"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<Sequential> shortcut_;  // empty: identity
};

class ResNeXt : public Module {
 public:
  explicit ResNeXt(const ResNeXtConfig& config);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ResNeXt"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::vector<std::shared_ptr<Sequential>> stages_;  // "layer1" .. "layer3"
  std::shared_ptr<Linear> linear_;
};

}  // namespace rg::nn
