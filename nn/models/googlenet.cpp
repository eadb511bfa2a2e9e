#include "nn/models/googlenet.h"

namespace rg::nn {

namespace {
// conv (with bias, as nn.Conv2d's default), BatchNorm2d, ReLU appended to `seq`.
void append_conv_bn_relu(BnReluSequential& seq, int64_t in, int64_t out, int64_t kernel) {
  seq.push_back(conv_kxk(in, out, kernel, 1, 1, Bias::with));
  seq.push_back(std::make_shared<BatchNorm2d>(out));
  seq.push_back(std::make_shared<ReLU>());
}
}  // namespace

Inception::Inception(int64_t in, const InceptionWidths& w) {
  b1_ = std::make_shared<BnReluSequential>();
  append_conv_bn_relu(*b1_, in, w.n1x1, 1);
  b2_ = std::make_shared<BnReluSequential>();
  append_conv_bn_relu(*b2_, in, w.n3x3red, 1);
  append_conv_bn_relu(*b2_, w.n3x3red, w.n3x3, 3);
  b3_ = std::make_shared<BnReluSequential>();
  append_conv_bn_relu(*b3_, in, w.n5x5red, 1);
  append_conv_bn_relu(*b3_, w.n5x5red, w.n5x5, 3);
  append_conv_bn_relu(*b3_, w.n5x5, w.n5x5, 3);
  b4_ = std::make_shared<BnReluSequential>();
  b4_->push_back(std::make_shared<MaxPool2d>(Size2{3, 3}, Size2{1, 1}, Size2{1, 1}));
  append_conv_bn_relu(*b4_, in, w.pool_planes, 1);
  register_module("b1", &b1_);
  register_module("b2", &b2_);
  register_module("b3", &b3_);
  register_module("b4", &b4_);
}

Tensor Inception::forward(const Tensor& x) {
  return cat({b1_->forward(x), b2_->forward(x), b3_->forward(x), b4_->forward(x)}, 1);
}

GoogLeNet::GoogLeNet(int64_t num_classes) {
  pre_layers_ = std::make_shared<BnReluSequential>();
  append_conv_bn_relu(*pre_layers_, 3, 192, 3);
  register_module("pre_layers", &pre_layers_);
  const std::pair<const char*, InceptionWidths> modules[] = {
      {"a3", {64, 96, 128, 16, 32, 32}},     {"b3", {128, 128, 192, 32, 96, 64}},
      {"a4", {192, 96, 208, 16, 48, 64}},    {"b4", {160, 112, 224, 24, 64, 64}},
      {"c4", {128, 128, 256, 24, 64, 64}},   {"d4", {112, 144, 288, 32, 64, 64}},
      {"e4", {256, 160, 320, 32, 128, 128}}, {"a5", {256, 160, 320, 32, 128, 128}},
      {"b5", {384, 192, 384, 48, 128, 128}}};
  int64_t in = 192;
  for (const auto& [name, w] : modules) {
    inceptions_.push_back(register_module(name, std::make_shared<Inception>(in, w)));
    in = w.n1x1 + w.n3x3 + w.n5x5 + w.pool_planes;
  }
  linear_ = register_module("linear", std::make_shared<Linear>(in, num_classes));
}

Tensor GoogLeNet::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "GoogLeNet: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = pre_layers_->forward(x);
  for (std::size_t i = 0; i < inceptions_.size(); ++i) {
    // pytorch-cifar's one max-pool (3x3, stride 2, padding 1) after b3 and after e4.
    if (i == 2 || i == 7) y = max_pool2d(y, 3, 2, 1).output;
    y = inceptions_[i]->forward(y);
  }
  // (N, 1024, 8, 8) -> (N, 1024): AvgPool2d(8, stride=1) on 8x8.
  return linear_->forward(avg_pool2d(y, 8, 1).flatten(1));
}

}  // namespace rg::nn
