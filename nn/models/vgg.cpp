#include "nn/models/vgg.h"

#include <vector>

namespace rg::nn {

namespace {
// pytorch-cifar's cfg['VGG16']: output channels of each conv; kMaxPool marks a 2x2 max-pool.
constexpr int64_t kMaxPool = 0;
const std::vector<int64_t> kVgg16 = {64,  64,       kMaxPool, 128,      128, kMaxPool,
                                     256, 256,      256,      kMaxPool, 512, 512,
                                     512, kMaxPool, 512,      512,      512, kMaxPool};
}  // namespace

VGG::VGG(int64_t num_classes) {
  features_ = std::make_shared<Sequential>();
  int64_t in = 3;
  for (int64_t out : kVgg16) {
    if (out == kMaxPool) {
      features_->push_back(std::make_shared<MaxPool2d>(Size2{2, 2}, Size2{2, 2}));
      continue;
    }
    features_->push_back(
        std::make_shared<Conv2d>(in, out, Size2{3, 3}, Conv2dOptions{.padding = {1, 1}}));
    features_->push_back(std::make_shared<BatchNorm2d>(out));
    features_->push_back(std::make_shared<ReLU>());
    in = out;
  }
  features_->push_back(std::make_shared<AvgPool2d>(Size2{1, 1}, Size2{1, 1}));
  register_module("features", &features_);
  classifier_ = std::make_shared<Linear>(in, num_classes);
  register_module("classifier", &classifier_);
}

Tensor VGG::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "VGG: expected images (N, 3, H, W), got ", x.describe());
  // features: (N, 3, 32, 32) -> (N, 512, 1, 1); other sizes leave more than 512 features
  // and fail in the classifier, as in pytorch-cifar.
  return classifier_->forward(features_->forward(x).flatten(1));
}

}  // namespace rg::nn
