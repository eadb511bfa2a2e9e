#pragma once
// VGG16 for CIFAR-10 as in pytorch-cifar (kuangliu, models/vgg.py): thirteen 3x3 convolutions
// (with bias) each followed by BatchNorm and ReLU, a 2x2 max-pool after each of the five
// blocks (32x32 -> 1x1), a 1x1 average pool (an identity kept so the layer indices, and so
// checkpoint keys such as "features.0.weight", match), then Linear 512 -> classes.
// 14,728,266 parameters for 10 classes.

#include <memory>
#include <string>

#include "nn/layers.h"

namespace rg::nn {

class VGG : public Module {
 public:
  explicit VGG(int64_t num_classes = 10);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "VGG"; }

 private:
  std::shared_ptr<Sequential> features_;
  std::shared_ptr<Linear> classifier_;
};

}  // namespace rg::nn
