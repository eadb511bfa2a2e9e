#include "nn/models/mobilenet.h"

namespace rg::nn {

MobileNetBlock::MobileNetBlock(int64_t in, int64_t out, int64_t stride) {
  conv1_ = conv_kxk(in, in, 3, stride, in);
  bn1_ = std::make_shared<BatchNorm2d>(in);
  conv2_ = conv_1x1(in, out);
  bn2_ = std::make_shared<BatchNorm2d>(out);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
}

Tensor MobileNetBlock::forward(const Tensor& x) {
  return bn2_->forward_relu(conv2_->forward(bn1_->forward_relu(conv1_->forward(x))));
}

MobileNet::MobileNet(int64_t num_classes) {
  // pytorch-cifar's cfg: output channels, and stride 2 where given.
  const std::pair<int64_t, int64_t> cfg[] = {{64, 1},  {128, 2},  {128, 1}, {256, 2}, {256, 1},
                                             {512, 2}, {512, 1},  {512, 1}, {512, 1}, {512, 1},
                                             {512, 1}, {1024, 2}, {1024, 1}};
  conv1_ = conv_kxk(3, 32, 3);
  bn1_ = std::make_shared<BatchNorm2d>(32);
  layers_ = std::make_shared<Sequential>();
  int64_t in = 32;
  for (const auto& [out, stride] : cfg) {
    layers_->push_back(std::make_shared<MobileNetBlock>(in, out, stride));
    in = out;
  }
  linear_ = std::make_shared<Linear>(in, num_classes);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("layers", &layers_);
  register_module("linear", &linear_);
}

Tensor MobileNet::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "MobileNet: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = layers_->forward(bn1_->forward_relu(conv1_->forward(x)));
  return linear_->forward(avg_pool2d(y, 2).flatten(1));
}

LeNet::LeNet(int64_t num_classes) {
  conv1_ = std::make_shared<Conv2d>(3, 6, Size2{5, 5});
  conv2_ = std::make_shared<Conv2d>(6, 16, Size2{5, 5});
  fc1_ = std::make_shared<Linear>(16 * 5 * 5, 120);
  fc2_ = std::make_shared<Linear>(120, 84);
  fc3_ = std::make_shared<Linear>(84, num_classes);
  register_module("conv1", &conv1_);
  register_module("conv2", &conv2_);
  register_module("fc1", &fc1_);
  register_module("fc2", &fc2_);
  register_module("fc3", &fc3_);
}

Tensor LeNet::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3 && x.size(2) == 32 && x.size(3) == 32,
           "LeNet: expected images (N, 3, 32, 32), got ", x.describe());
  Tensor y = max_pool2d(relu(conv1_->forward(x)), 2).output;
  y = max_pool2d(relu(conv2_->forward(y)), 2).output.flatten(1);
  return fc3_->forward(relu(fc2_->forward(relu(fc1_->forward(y)))));
}

namespace {
// pytorch-cifar's SepConv: conv1 (k×k, stride, padding (k − 1) / 2, groups = in) and bn1.
class SepConv : public Module {
 public:
  SepConv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
    conv1_ = conv_kxk(in, out, kernel, stride, in);
    bn1_ = std::make_shared<BatchNorm2d>(out);
    register_module("conv1", &conv1_);
    register_module("bn1", &bn1_);
  }
  Tensor forward(const Tensor& x) override { return bn1_->forward(conv1_->forward(x)); }
  std::string type_name() const override { return "SepConv"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
};
}  // namespace

PNASNetCell::PNASNetCell(PNASCell kind, int64_t in, int64_t out, int64_t stride)
    : kind_(kind), stride_(stride) {
  sep_conv1_ = register_module("sep_conv1", std::make_shared<SepConv>(in, out, 7, stride));
  if (kind == PNASCell::b) {
    sep_conv2_ = register_module("sep_conv2", std::make_shared<SepConv>(in, out, 3, stride));
    sep_conv3_ = register_module("sep_conv3", std::make_shared<SepConv>(in, out, 5, stride));
  }
  if (stride == 2) {
    conv1_ = conv_1x1(in, out);
    bn1_ = std::make_shared<BatchNorm2d>(out);
    register_module("conv1", &conv1_);
    register_module("bn1", &bn1_);
  }
  if (kind == PNASCell::b) {
    conv2_ = conv_1x1(2 * out, out);
    bn2_ = std::make_shared<BatchNorm2d>(out);
    register_module("conv2", &conv2_);
    register_module("bn2", &bn2_);
  }
}

Tensor PNASNetCell::pooled(const Tensor& x) const {
  Tensor y = max_pool2d(x, 3, stride_, 1).output;
  return stride_ == 2 ? bn1_->forward(conv1_->forward(y)) : y;
}

Tensor PNASNetCell::forward(const Tensor& x) {
  if (kind_ == PNASCell::a) return add_relu(sep_conv1_->forward(x), pooled(x));
  const Tensor left = add_relu(sep_conv1_->forward(x), sep_conv2_->forward(x));
  const Tensor right = add_relu(pooled(x), sep_conv3_->forward(x));
  return bn2_->forward_relu(conv2_->forward(cat({left, right}, 1)));
}

PNASNet::PNASNet(PNASCell kind, int64_t planes, int64_t num_classes) {
  conv1_ = conv_kxk(3, planes, 3);
  bn1_ = std::make_shared<BatchNorm2d>(planes);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  int64_t in = planes;
  auto cells = [&](int64_t width) {
    auto stage = std::make_shared<Sequential>();
    for (int i = 0; i < 6; ++i) {
      stage->push_back(std::make_shared<PNASNetCell>(kind, in, width, 1));
      in = width;
    }
    return std::shared_ptr<Module>(stage);
  };
  auto downsample = [&](int64_t width) {
    auto cell = std::make_shared<PNASNetCell>(kind, in, width, 2);
    in = width;
    return std::shared_ptr<Module>(cell);
  };
  layers_.push_back(register_module("layer1", cells(planes)));
  layers_.push_back(register_module("layer2", downsample(2 * planes)));
  layers_.push_back(register_module("layer3", cells(2 * planes)));
  layers_.push_back(register_module("layer4", downsample(4 * planes)));
  layers_.push_back(register_module("layer5", cells(4 * planes)));
  linear_ = register_module("linear", std::make_shared<Linear>(in, num_classes));
}

Tensor PNASNet::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "PNASNet: expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
  for (auto& layer : layers_) y = layer->forward(y);
  return linear_->forward(avg_pool2d(y, 8).flatten(1));
}

}  // namespace rg::nn
