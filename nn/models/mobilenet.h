#pragma once
// Small pytorch-cifar models (kuangliu, models/mobilenet.py, lenet.py, pnasnet.py):
// - MobileNet (Howard et al. 2017): a 3x3 stem of 32, thirteen depthwise-separable blocks
//   (3x3 depthwise-BN-ReLU, 1x1-BN-ReLU) to 1024 channels at 2x2, a 2x2 average pool, linear.
//   3,217,226 parameters for 10 classes.
// - LeNet: conv 5x5 (6) - relu - max-pool 2 - conv 5x5 (16) - relu - max-pool 2 - fc 120 - fc 84
//   - fc classes, biases throughout. 62,006 parameters.
// - PNASNet A and B (Liu et al. 2018, as pytorch-cifar simplifies them): a 3x3 stem, three
//   stages of six cells with a stride-2 cell between them, an 8x8 average pool, linear. Its
//   "separable" convolution is one grouped k×k conv (groups = its input channels) and BN.
//   PNASNetA 130,646 and PNASNetB 451,626 parameters.

#include <memory>
#include <string>
#include <vector>

#include "nn/models/blocks.h"

namespace rg::nn {

class MobileNetBlock : public Module {
 public:
  MobileNetBlock(int64_t in, int64_t out, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Block"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
};

class MobileNet : public Module {
 public:
  explicit MobileNet(int64_t num_classes = 10);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MobileNet"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::shared_ptr<Sequential> layers_;
  std::shared_ptr<Linear> linear_;
};

class LeNet : public Module {
 public:
  explicit LeNet(int64_t num_classes = 10);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "LeNet"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<Linear> fc1_, fc2_, fc3_;
};

enum class PNASCell { a, b };

class PNASNetCell : public Module {
 public:
  PNASNetCell(PNASCell kind, int64_t in, int64_t out, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return kind_ == PNASCell::a ? "CellA" : "CellB"; }

 private:
  // The max-pool branch: 3x3, padding 1, at the cell's stride; at stride 2 then conv1-bn1.
  Tensor pooled(const Tensor& x) const;

  PNASCell kind_;
  int64_t stride_;
  // SepConvs: conv1 (k×k, groups = in) and bn1 each; 2 and 3 in CellB only.
  std::shared_ptr<Module> sep_conv1_, sep_conv2_, sep_conv3_;
  std::shared_ptr<Conv2d> conv1_, conv2_;  // conv2: CellB only
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
};

class PNASNet : public Module {
 public:
  PNASNet(PNASCell kind, int64_t planes, int64_t num_classes = 10);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "PNASNet"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::vector<std::shared_ptr<Module>> layers_;  // "layer1" .. "layer5"
  std::shared_ptr<Linear> linear_;
};

}  // namespace rg::nn
