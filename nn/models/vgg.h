#pragma once
// VGG16 for CIFAR-10 as in pytorch-cifar (kuangliu, models/vgg.py): thirteen 3x3 convolutions
// (with bias) each followed by BatchNorm and ReLU, a 2x2 max-pool after each of the five
// blocks (32x32 -> 1x1), a 1x1 average pool (an identity kept so the layer indices, and so
// checkpoint keys such as "features.0.weight", match), then Linear 512 -> classes.
// 14,728,266 parameters for 10 classes. VGG11, VGG13 and VGG19 are pytorch-cifar's other cfgs
// (8, 10 and 16 convolutions; 9,231,114, 9,416,010 and 20,040,522 parameters).

#include <memory>
#include <string>

#include "nn/layers.h"

namespace rg::nn {

class VGG : public Module {
 public:
  // depth: 11, 13, 16 or 19 (pytorch-cifar's cfg['VGG<depth>']).
  explicit VGG(int64_t num_classes = 10, int64_t depth = 16);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "VGG"; }

 private:
  std::shared_ptr<Sequential> features_;
  std::shared_ptr<Linear> classifier_;
};

}  // namespace rg::nn
