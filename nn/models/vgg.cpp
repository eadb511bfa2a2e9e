#include "nn/models/vgg.h"

#include <vector>

namespace rg::nn {

namespace {
// pytorch-cifar's cfg['VGG<depth>']: output channels of each conv; kMaxPool marks a 2x2 max-pool.
constexpr int64_t kMaxPool = 0;
constexpr int64_t M = kMaxPool;
const std::vector<int64_t>& vgg_cfg(int64_t depth) {
  static const std::vector<int64_t> vgg11 = {64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M};
  static const std::vector<int64_t> vgg13 = {64, 64,  M,   128, 128, M,   256, 256,
                                             M,  512, 512, M,   512, 512, M};
  static const std::vector<int64_t> vgg16 = {64, 64,  M,   128, 128, M,   256, 256, 256,
                                             M,  512, 512, 512, M,   512, 512, 512, M};
  static const std::vector<int64_t> vgg19 = {64,  64,  M,   128, 128, M,   256, 256, 256, 256, M,
                                             512, 512, 512, 512, M,   512, 512, 512, 512, M};
  switch (depth) {
    case 11:
      return vgg11;
    case 13:
      return vgg13;
    case 16:
      return vgg16;
    case 19:
      return vgg19;
    default:
      fail("VGG: depth is 11, 13, 16 or 19 (pytorch-cifar's cfgs), got ", depth);
  }
}
}  // namespace

VGG::VGG(int64_t num_classes, int64_t depth) {
  features_ = std::make_shared<Sequential>();
  int64_t in = 3;
  for (int64_t out : vgg_cfg(depth)) {
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
