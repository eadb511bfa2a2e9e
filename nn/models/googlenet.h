#pragma once
// GoogLeNet for CIFAR-10 as in pytorch-cifar (kuangliu, models/googlenet.py, after Szegedy et al.
// 2015): a 3x3 stem of 192 channels, nine Inception modules (two at 32x32, five at 16x16, two at
// 8x8, a 3x3 max-pool of stride 2 between the groups), an 8x8 average pool and linear. Each
// Inception concatenates four branches: 1x1; 1x1 then 3x3; 1x1 then two 3x3 (pytorch-cifar's
// "5x5"); a 3x3 max-pool of stride 1 then 1x1 — every conv with bias, BN and ReLU. 6,166,250
// parameters for 10 classes.

#include <memory>
#include <string>
#include <vector>

#include "nn/models/blocks.h"

namespace rg::nn {

struct InceptionWidths {
  int64_t n1x1, n3x3red, n3x3, n5x5red, n5x5, pool_planes;
};

class Inception : public Module {
 public:
  Inception(int64_t in, const InceptionWidths& w);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Inception"; }

 private:
  std::shared_ptr<BnReluSequential> b1_, b2_, b3_, b4_;  // b4 starts with the max-pool
};

class GoogLeNet : public Module {
 public:
  explicit GoogLeNet(int64_t num_classes = 10);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "GoogLeNet"; }

 private:
  std::shared_ptr<BnReluSequential> pre_layers_;
  std::vector<std::shared_ptr<Inception>> inceptions_;  // a3, b3, a4 .. e4, a5, b5
  std::shared_ptr<Linear> linear_;
};

}  // namespace rg::nn
