#include "nn/models/dpn.h"

namespace rg::nn {

DPNConfig dpn26_config(int64_t num_classes) {
  DPNConfig c;
  c.blocks = {2, 2, 2, 2};
  c.num_classes = num_classes;
  return c;
}

DPNConfig dpn92_config(int64_t num_classes) {
  DPNConfig c;
  c.num_classes = num_classes;
  return c;
}

DPNBottleneck::DPNBottleneck(int64_t last_planes, int64_t in_planes, int64_t out_planes,
                             int64_t dense_depth, int64_t stride, DPNShortcut shortcut)
    : out_planes_(out_planes) {
  conv1_ = conv_1x1(last_planes, in_planes);
  bn1_ = std::make_shared<BatchNorm2d>(in_planes);
  conv2_ = conv_kxk(in_planes, in_planes, 3, stride, 32);
  bn2_ = std::make_shared<BatchNorm2d>(in_planes);
  conv3_ = conv_1x1(in_planes, out_planes + dense_depth);
  bn3_ = std::make_shared<BatchNorm2d>(out_planes + dense_depth);
  shortcut_ = std::make_shared<Sequential>();
  if (shortcut == DPNShortcut::projection) {
    shortcut_->push_back(conv_1x1(last_planes, out_planes + dense_depth, stride));
    shortcut_->push_back(std::make_shared<BatchNorm2d>(out_planes + dense_depth));
  }
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  register_module("conv2", &conv2_);
  register_module("bn2", &bn2_);
  register_module("conv3", &conv3_);
  register_module("bn3", &bn3_);
  register_module("shortcut", &shortcut_);
}

Tensor DPNBottleneck::forward(const Tensor& x) {
  Tensor z = bn1_->forward_relu(conv1_->forward(x));
  z = bn2_->forward_relu(conv2_->forward(z));
  z = bn3_->forward(conv3_->forward(z));
  const Tensor s = shortcut_->size() ? shortcut_->forward(x) : x;
  const int64_t d = out_planes_;
  // The residual sum and the relu in one pass over the first d channels; the relu of the two
  // dense parts after the cat (relu(cat) = cat of relus).
  const Tensor residual = add_relu(s.narrow(1, 0, d), z.narrow(1, 0, d));
  const Tensor dense = relu(cat({s.narrow(1, d, s.size(1) - d), z.narrow(1, d, z.size(1) - d)}, 1));
  return cat({residual, dense}, 1);
}

DPN::DPN(const DPNConfig& config) {
  RG_CHECK(config.in_planes.size() == 4 && config.out_planes.size() == 4 &&
               config.blocks.size() == 4 && config.dense_depth.size() == 4,
           "DPN: expected four stages of in_planes, out_planes, blocks and dense_depth");
  conv1_ = conv_kxk(3, 64, 3);
  bn1_ = std::make_shared<BatchNorm2d>(64);
  register_module("conv1", &conv1_);
  register_module("bn1", &bn1_);
  int64_t last = 64;
  for (std::size_t s = 0; s < 4; ++s) {
    auto stage = std::make_shared<Sequential>();
    for (int64_t b = 0; b < config.blocks[s]; ++b) {
      stage->push_back(std::make_shared<DPNBottleneck>(
          last, config.in_planes[s], config.out_planes[s], config.dense_depth[s],
          b == 0 && s > 0 ? 2 : 1, b == 0 ? DPNShortcut::projection : DPNShortcut::identity));
      last = config.out_planes[s] + (b + 2) * config.dense_depth[s];
    }
    stages_.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  linear_ = register_module("linear", std::make_shared<Linear>(last, config.num_classes));
}

Tensor DPN::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, "DPN: expected images (N, 3, H, W), got ", x.describe());
  Tensor y = bn1_->forward_relu(conv1_->forward(x));
  for (auto& stage : stages_) y = stage->forward(y);
  return linear_->forward(avg_pool2d(y, 4).flatten(1));
}

}  // namespace rg::nn
