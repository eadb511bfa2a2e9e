#pragma once
// Keller Jordan's airbench94 network (cifar10-airbench, legacy/airbench94.py), the net of the
// 94 % in 3.8 A100-seconds recipe (train_cifar --preset airbench94):
//
//   x (N, 3, 32, 32)
//   -> whiten: 2x2 conv, 3 -> 24 channels, no padding, bias   (31x31)  then GELU
//   -> group(24 -> 64), group(64 -> 256), group(256 -> 256)    (15, 7, 3)
//        group: conv3x3 -> max-pool 2 -> BN -> GELU -> conv3x3 -> BN -> GELU
//   -> max-pool 3 -> flatten -> linear(256 -> classes, no bias) -> x 1/9
//
// What sets it apart from our `airbench` (nn/models/airbench.h), all as airbench94.py has it:
// - GELU (exact, erf) instead of ReLU;
// - BatchNorm with running-stat momentum 0.4 (airbench94's "batchnorm_momentum 0.6" is the
//   weight of the old statistics, PyTorch's momentum = 1 − 0.6) and eps 1e-12, its weight
//   fixed at 1 (requires_grad off): only the bias trains;
// - 3x3 convs initialised as PyTorch's Conv2d (kaiming-uniform, a = √5), then the first
//   `in` filters set to the identity (dirac): each group starts by passing its input through;
// - the whitening conv's bias starts at 0 and trains (the recipe stops it after 3 epochs,
//   whiten_bias()); its filters come from the uncentred patch covariance of training images.

#include <memory>

#include "nn/layers.h"

namespace rg::nn {

class Airbench94Group : public Module {
 public:
  Airbench94Group(int64_t in, int64_t out);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Airbench94Group"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> norm1_, norm2_;
};

class Airbench94 : public Module {
 public:
  explicit Airbench94(int64_t num_classes = 10);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Airbench94"; }
  // Sets the whitening filters from images (N, 3, H, W) f32 (airbench94 uses the first 5000
  // training images, normalised) and freezes them.
  void init_whitening(const Tensor& images, double eps = 5e-4);
  // The whitening conv's bias, which the recipe trains only for its first epochs.
  Tensor& whiten_bias() { return whiten_->bias_; }

 private:
  std::shared_ptr<Conv2d> whiten_;
  std::vector<std::shared_ptr<Airbench94Group>> groups_;
  std::shared_ptr<Linear> head_;
};

}  // namespace rg::nn
