#include "nn/models/dla.h"

#include "nn/models/resnet.h"

namespace rg::nn {

DLARoot::DLARoot(int64_t in, int64_t out) {
  conv_ = conv_1x1(in, out);
  bn_ = std::make_shared<BatchNorm2d>(out);
  register_module("conv", &conv_);
  register_module("bn", &bn_);
}

Tensor DLARoot::forward(const Tensor& x) {
  return bn_->forward_relu(conv_->forward(x));
}

Tensor DLARoot::forward(const std::vector<Tensor>& xs) {
  return forward(cat(xs, 1));
}

DLATree::DLATree(DLAKind kind, int64_t in, int64_t out, int64_t level, int64_t stride)
    : kind_(kind), level_(level) {
  RG_CHECK(level >= 1, "DLA: a tree's level must be >= 1, got ", level);
  auto block = [](int64_t i, int64_t o, int64_t s) -> std::shared_ptr<Module> {
    return std::make_shared<BasicBlock>(i, o, s);
  };
  // Registered in pytorch-cifar's order, which is its parameters' order.
  if (kind == DLAKind::simple) {
    root_ = register_module("root", std::make_shared<DLARoot>(2 * out, out));
    if (level == 1) {
      left_ = block(in, out, stride);
      right_ = block(out, out, 1);
    } else {
      left_ = std::make_shared<DLATree>(kind, in, out, level - 1, stride);
      right_ = std::make_shared<DLATree>(kind, out, out, level - 1, 1);
    }
    register_module("left_tree", left_);
    register_module("right_tree", right_);
    return;
  }
  if (level == 1) {
    root_ = register_module("root", std::make_shared<DLARoot>(2 * out, out));
    left_ = register_module("left_node", block(in, out, stride));
    right_ = register_module("right_node", block(out, out, 1));
    return;
  }
  root_ = register_module("root", std::make_shared<DLARoot>((level + 2) * out, out));
  subtrees_.resize(static_cast<std::size_t>(level - 1));
  for (int64_t i = level - 1; i >= 1; --i) {  // level_{L-1} first, as pytorch-cifar's loop
    subtrees_[static_cast<std::size_t>(i - 1)] = register_module(
        "level_" + std::to_string(i), std::make_shared<DLATree>(kind, in, out, i, stride));
  }
  prev_root_ = register_module("prev_root", block(in, out, stride));
  left_ = register_module("left_node", block(out, out, 1));
  right_ = register_module("right_node", block(out, out, 1));
}

Tensor DLATree::forward(const Tensor& x) {
  if (kind_ == DLAKind::simple) {
    Tensor a = left_->forward(x);
    Tensor b = right_->forward(a);
    return root_->forward({a, b});
  }
  std::vector<Tensor> xs;
  if (level_ > 1) xs.push_back(prev_root_->forward(x));
  Tensor y = x;
  for (int64_t i = level_ - 1; i >= 1; --i) {  // level_{L-1}, then down to level_1, chained
    y = subtrees_[static_cast<std::size_t>(i - 1)]->forward(y);
    xs.push_back(y);
  }
  y = left_->forward(y);
  xs.push_back(y);
  xs.push_back(right_->forward(y));
  return root_->forward(xs);
}

DLA::DLA(DLAKind kind, int64_t num_classes) : kind_(kind) {
  base_ = conv_bn_relu(conv_kxk(3, 16, 3));
  layer1_ = conv_bn_relu(conv_kxk(16, 16, 3));
  layer2_ = conv_bn_relu(conv_kxk(16, 32, 3));
  register_module("base", &base_);
  register_module("layer1", &layer1_);
  register_module("layer2", &layer2_);
  struct Stage {
    int64_t in, out, level, stride;
  };
  const Stage stages[] = {{32, 64, 1, 1}, {64, 128, 2, 2}, {128, 256, 2, 2}, {256, 512, 1, 2}};
  int64_t name = 3;
  for (const Stage& s : stages)
    trees_.push_back(
        register_module("layer" + std::to_string(name++),
                        std::make_shared<DLATree>(kind, s.in, s.out, s.level, s.stride)));
  linear_ = register_module("linear", std::make_shared<Linear>(512, num_classes));
}

Tensor DLA::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3, type_name(), ": expected images (N, 3, H, W), got ",
           x.describe());
  Tensor y = layer2_->forward(layer1_->forward(base_->forward(x)));
  for (auto& tree : trees_) y = tree->forward(y);
  return linear_->forward(avg_pool2d(y, 4).flatten(1));
}

}  // namespace rg::nn
