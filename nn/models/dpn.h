#pragma once
// Dual Path Networks for CIFAR-10 as in pytorch-cifar (kuangliu, models/dpn.py, after Chen et
// al. 2017): a 3x3 stem of 64 channels, four stages of bottlenecks (1x1, 3x3 in 32 groups, 1x1
// to out + dense channels) whose output joins a residual path and a densely connected one:
//   y = relu(cat([s[:, :out] + z[:, :out], s[:, out:], z[:, out:]], 1)),
// s the shortcut (a 1x1 conv + BN in each stage's first block, else the input), z the block's
// last BN; so each block widens the dense part by its dense depth. A 4x4 average pool, linear.
// Parameters for 10 classes: DPN26 11,574,842; DPN92 34,236,634.

#include <memory>
#include <string>
#include <vector>

#include "nn/models/blocks.h"

namespace rg::nn {

struct DPNConfig {
  std::vector<int64_t> in_planes = {96, 192, 384, 768};      // the bottleneck's width per stage
  std::vector<int64_t> out_planes = {256, 512, 1024, 2048};  // the residual path's channels
  std::vector<int64_t> blocks = {3, 4, 20, 3};
  std::vector<int64_t> dense_depth = {16, 32, 24, 128};  // channels each block adds
  int64_t num_classes = 10;
};

DPNConfig dpn26_config(int64_t num_classes = 10);
DPNConfig dpn92_config(int64_t num_classes = 10);

// A stage's first block projects its input (pytorch-cifar's first_layer); the others add it.
enum class DPNShortcut { projection, identity };

class DPNBottleneck : public Module {
 public:
  DPNBottleneck(int64_t last_planes, int64_t in_planes, int64_t out_planes, int64_t dense_depth,
                int64_t stride, DPNShortcut shortcut);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Bottleneck"; }

 private:
  int64_t out_planes_;
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<Sequential> shortcut_;  // empty: identity
};

class DPN : public Module {
 public:
  explicit DPN(const DPNConfig& config);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "DPN"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::vector<std::shared_ptr<Sequential>> stages_;  // "layer1" .. "layer4"
  std::shared_ptr<Linear> linear_;
};

}  // namespace rg::nn
