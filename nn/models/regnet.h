#pragma once
// RegNet for CIFAR-10 as in pytorch-cifar (kuangliu, models/regnet.py, after Radosavovic et al.
// 2020, "Designing Network Design Spaces"): a 3x3 stem of 64 channels, four stages of X blocks
// (a 1x1, a grouped 3x3 of group width g, a 1x1, with a residual), global average pool, linear.
// The Y variants put squeeze-and-excitation after the grouped conv. Parameters for 10 classes:
// RegNetX_200MF 2,321,946; RegNetX_400MF 4,779,338;
// RegNetY_400MF 5,714,362.

#include <memory>
#include <string>
#include <vector>

#include "nn/models/blocks.h"

namespace rg::nn {

struct RegNetConfig {
  std::vector<int64_t> depths;   // blocks per stage
  std::vector<int64_t> widths;   // output channels per stage
  std::vector<int64_t> strides;  // of each stage's first block
  int64_t group_width = 8;       // channels per group of the 3x3 conv
  double bottleneck_ratio = 1;   // the 3x3's channels: round(width · ratio)
  double se_ratio = 0;           // > 0: SE of round(block input · ratio) channels (RegNetY)
  int64_t num_classes = 10;
};

RegNetConfig regnetx_200mf_config(int64_t num_classes = 10);
RegNetConfig regnetx_400mf_config(int64_t num_classes = 10);
RegNetConfig regnety_400mf_config(int64_t num_classes = 10);

// x -> relu(bn1(conv1 1x1)) -> relu(bn2(conv2 3x3 grouped, stride)) -> [se] -> bn3(conv3 1x1)
//   -> + shortcut(x) (identity, or 1x1 conv + BN where the shape changes) -> relu.
class RegNetBlock : public Module {
 public:
  RegNetBlock(int64_t in, int64_t out, int64_t stride, const RegNetConfig& config);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Block"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<SqueezeExcitation> se_;  // null (and unregistered) without SE
  std::shared_ptr<Sequential> shortcut_;   // empty: identity
};

class RegNet : public Module {
 public:
  explicit RegNet(const RegNetConfig& config);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "RegNet"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::vector<std::shared_ptr<Sequential>> stages_;  // "layer1" .. "layer4"
  std::shared_ptr<Linear> linear_;
};

}  // namespace rg::nn
