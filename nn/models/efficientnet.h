#pragma once
// EfficientNet-B0 for CIFAR-10 as in pytorch-cifar (kuangliu, models/efficientnet.py, after Tan &
// Le 2019): a 3x3 stem of 32 channels at stride 1, sixteen MBConv blocks in seven stages (1x1
// expansion, a depthwise k×k, squeeze-and-excitation with swish, a 1x1 projection; a residual
// where the shape allows), global average pool, dropout, linear. 3,599,686 parameters for 10
// classes.
//
// Stochastic depth ("drop connect"): in training a block with a residual zeroes its branch for a
// whole sample with probability p and scales the kept ones by 1/(1 − p). pytorch-cifar computes
// each block's p as drop_connect_rate · b / blocks but never advances b, so every block's p is 0:
// DropConnect::as_pytorch_cifar keeps that (its checkpoints trained so); DropConnect::linear
// ramps p over the blocks as EfficientNet's paper does.

#include <memory>
#include <string>
#include <vector>

#include "nn/models/blocks.h"

namespace rg::nn {

enum class DropConnect { as_pytorch_cifar, linear };

struct EfficientNetConfig {
  std::vector<int64_t> blocks = {1, 2, 2, 3, 3, 4, 1};
  std::vector<int64_t> expansion = {1, 6, 6, 6, 6, 6, 6};
  std::vector<int64_t> out_channels = {16, 24, 40, 80, 112, 192, 320};
  std::vector<int64_t> kernel_size = {3, 3, 5, 3, 5, 5, 3};
  std::vector<int64_t> stride = {1, 2, 2, 2, 1, 2, 1};
  double dropout_rate = 0.2;  // before the linear, in training
  double drop_connect_rate = 0.2;
  DropConnect drop_connect = DropConnect::as_pytorch_cifar;
  int64_t num_classes = 10;
};

// x · m / (1 − p) with m ~ Bernoulli(1 − p) drawn once per sample (N, 1, 1, 1) from the default
// generator, in train mode; x in eval mode or where p = 0. Drawn through dropout (ops/dropout)
// on ones: its mask and scale are exactly m / (1 − p).
Tensor drop_connect(const Tensor& x, double p, Mode mode);

// MBConv: x -> [swish(bn1(conv1 1x1 expand))] -> swish(bn2(conv2 k×k depthwise, stride)) -> se
//   -> bn3(conv3 1x1) -> [drop_connect, + x]. With expansion 1 pytorch-cifar still builds conv1
// and bn1 but never calls them; they are kept (so its checkpoints load) and frozen (they get no
// gradient; PyTorch's optimizer skips them as well).
class EfficientNetBlock : public Module {
 public:
  EfficientNetBlock(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t expansion,
                    double se_ratio, double drop_rate);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Block"; }
  double drop_rate() const { return drop_rate_; }

 private:
  int64_t expansion_;
  bool residual_;
  double drop_rate_;
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<SqueezeExcitation> se_;
};

class EfficientNet : public Module {
 public:
  explicit EfficientNet(const EfficientNetConfig& config = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "EfficientNet"; }

 private:
  double dropout_rate_;
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::shared_ptr<Sequential> layers_;
  std::shared_ptr<Linear> linear_;
};

}  // namespace rg::nn
