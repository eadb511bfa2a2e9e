#pragma once
// DenseNet for CIFAR-10 as in pytorch-cifar (kuangliu, models/densenet.py, after Huang et al.
// 2017): a 3x3 stem of 2k channels (k the growth rate), four dense stages of bottleneck layers —
// each BN-ReLU-1x1 conv to 4k, BN-ReLU-3x3 conv to k, its output concatenated in front of its
// input — with transitions between them (BN-ReLU-1x1 conv to half the channels, rounded down,
// then a 2x2 average pool), a final BN-ReLU, a 4x4 average pool and linear. Parameters for 10
// classes: DenseNet121 (6, 12, 24, 16; k 32) 6,956,298; DenseNet169 (6, 12, 32, 32) 12,493,322;
// DenseNet201 (6, 12, 48, 32) 18,104,330; DenseNet161 (6, 12, 36, 24; k 48) 26,482,378;
// densenet_cifar (6, 12, 24, 16; k 12) 1,000,618.

#include <memory>
#include <string>
#include <vector>

#include "nn/models/blocks.h"

namespace rg::nn {

struct DenseNetConfig {
  std::vector<int64_t> blocks = {6, 12, 24, 16};  // bottleneck layers per dense stage
  int64_t growth_rate = 32;
  double reduction = 0.5;  // a transition keeps floor(channels · reduction)
  int64_t num_classes = 10;
};

// x (N, C, H, W) -> cat([conv2(relu(bn2(conv1(relu(bn1(x)))))), x], 1)  (N, C + k, H, W).
class DenseBottleneck : public Module {
 public:
  DenseBottleneck(int64_t in, int64_t growth_rate);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Bottleneck"; }

 private:
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<Conv2d> conv1_, conv2_;
};

// x -> avg_pool2d(conv(relu(bn(x))), 2).
class DenseTransition : public Module {
 public:
  DenseTransition(int64_t in, int64_t out);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Transition"; }

 private:
  std::shared_ptr<BatchNorm2d> bn_;
  std::shared_ptr<Conv2d> conv_;
};

class DenseNet : public Module {
 public:
  explicit DenseNet(const DenseNetConfig& config);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "DenseNet"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::vector<std::shared_ptr<Sequential>> dense_;       // "dense1" .. "dense4"
  std::vector<std::shared_ptr<DenseTransition>> trans_;  // "trans1" .. "trans3"
  std::shared_ptr<BatchNorm2d> bn_;
  std::shared_ptr<Linear> linear_;
};

DenseNetConfig densenet121_config(int64_t num_classes = 10);
DenseNetConfig densenet161_config(int64_t num_classes = 10);
DenseNetConfig densenet169_config(int64_t num_classes = 10);
DenseNetConfig densenet201_config(int64_t num_classes = 10);
DenseNetConfig densenet_cifar_config(int64_t num_classes = 10);

}  // namespace rg::nn
