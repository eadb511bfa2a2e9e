#pragma once
// Deep Layer Aggregation for CIFAR-10 as in pytorch-cifar (kuangliu, models/dla.py and
// dla_simple.py, after Yu et al. 2018): a stem of three 3x3 conv-BN-ReLU ("base", "layer1",
// "layer2"), then trees of ResNet BasicBlocks (nn/models/resnet.h) whose outputs a Root joins:
// cat along channels, 1x1 conv, BN, ReLU. Four trees ("layer3" .. "layer6", levels 1, 2, 2, 1,
// widths 64 .. 512, strides 1, 2, 2, 2), a 4x4 average pool, linear.
//   DLA:       a tree of level L > 1 also aggregates a BasicBlock of its input ("prev_root") and
//              every subtree's output in one Root ("level_1" .. "level_{L-1}", "left_node",
//              "right_node"). 16,291,386 parameters for 10 classes.
//   SimpleDLA: a tree is two subtrees (or blocks), "left_tree" and "right_tree", and a Root of
//              both outputs. 15,142,970 parameters.

#include <memory>
#include <string>
#include <vector>

#include "nn/models/blocks.h"

namespace rg::nn {

// xs -> relu(bn(conv(cat(xs, 1)))), conv 1x1 without bias.
class DLARoot : public Module {
 public:
  DLARoot(int64_t in, int64_t out);
  Tensor forward(const Tensor& x) override;  // one input: conv of it alone
  Tensor forward(const std::vector<Tensor>& xs);
  std::string type_name() const override { return "Root"; }

 private:
  std::shared_ptr<Conv2d> conv_;
  std::shared_ptr<BatchNorm2d> bn_;
};

enum class DLAKind { full, simple };

class DLATree : public Module {
 public:
  DLATree(DLAKind kind, int64_t in, int64_t out, int64_t level, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Tree"; }

 private:
  DLAKind kind_;
  int64_t level_;
  std::shared_ptr<DLARoot> root_;
  // full: level_1 .. level_{L-1} (subtrees_[i] is level_{i+1}), prev_root, left_node, right_node;
  // simple: left_tree, right_tree (blocks at level 1).
  std::vector<std::shared_ptr<Module>> subtrees_;
  std::shared_ptr<Module> prev_root_, left_, right_;
};

class DLA : public Module {
 public:
  explicit DLA(DLAKind kind, int64_t num_classes = 10);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return kind_ == DLAKind::full ? "DLA" : "SimpleDLA"; }

 private:
  DLAKind kind_;
  std::shared_ptr<Sequential> base_, layer1_, layer2_;
  std::vector<std::shared_ptr<DLATree>> trees_;  // "layer3" .. "layer6"
  std::shared_ptr<Linear> linear_;
};

}  // namespace rg::nn
