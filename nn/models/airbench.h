#pragma once
// A fast CIFAR-10 network after Keller Jordan's airbench (2024), for short runs on few cores:
//
//   x (N, 3, 32, 32)
//   -> whiten: 2x2 conv, 3 -> 24 channels, no padding       (31x31)  then ReLU
//   -> group(24 -> w1), group(w1 -> w2), group(w2 -> w3)     (15, 7, 3)
//        group: conv3x3 -> max-pool 2 -> BN -> ReLU -> conv3x3 -> BN -> ReLU
//   -> max-pool 3 -> flatten -> linear(w3 -> classes, no bias) -> x 1/9
//
// widths (w1, w2, w3) = (64, 256, 256) times a width multiplier. The whitening conv can be set
// from data (init_whitening): its 12 filters are the eigenvectors of the 2x2x3 patch covariance
// scaled by 1/sqrt(eigenvalue), and their negations — so the first layer starts out
// decorrelating pixels, which makes the first epochs learn much faster. Its weights are then
// frozen (requires_grad off), as in airbench; its bias trains.
// Differences from airbench: ReLU instead of GELU, affine BatchNorm with PyTorch's defaults,
// no lookahead; the training recipe is train_cifar's.

#include <memory>

#include "nn/layers.h"

namespace rg::nn {

// Whether the 2x2x3 patch covariance subtracts the patches' mean first. Our airbench does;
// airbench94.py takes the plain second moment (patches_flat.T @ patches_flat / n).
enum class PatchCovariance { centered, uncentered };

// The 24 whitening filters (24, 3, 2, 2) f32 of images (N, 3, H, W) f32: the eigenvectors of the
// patch covariance scaled by 1/sqrt(eigenvalue + eps), largest eigenvalue first, then their
// negations. Shared by Airbench and Airbench94.
Tensor whitening_filters(const Tensor& images, double eps, PatchCovariance covariance);

class AirbenchGroup : public Module {
 public:
  AirbenchGroup(int64_t in, int64_t out);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AirbenchGroup"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> norm1_, norm2_;
};

class Airbench : public Module {
 public:
  explicit Airbench(int64_t num_classes = 10, double width_multiplier = 1.0);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Airbench"; }
  // Sets the whitening filters from images (N, 3, H, W) f32 (a few thousand training
  // images, normalised as the model will see them) and freezes them.
  void init_whitening(const Tensor& images, double eps = 5e-4);

 private:
  std::shared_ptr<Conv2d> whiten_;
  std::vector<std::shared_ptr<AirbenchGroup>> groups_;
  std::shared_ptr<Linear> head_;
};

}  // namespace rg::nn
