#pragma once
// The volumetric layers (N, C, D, H, W) of the 3-D UNet that have no rank-generic form:
// MaxPool3d and BatchNorm3d (Conv3d and ConvTranspose3d are nn/conv.h's, for any rank).
// They mirror their 2-D twins in layers.h and call the op of the same name in ops/.

#include <array>

#include "nn/layers.h"

namespace rg::nn {

// stride {0, 0, 0} means stride = kernel (PyTorch's stride=None).
class MaxPool3d : public Module {
 public:
  explicit MaxPool3d(Size3 kernel, Size3 stride = {0, 0, 0}, Size3 padding = {0, 0, 0});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MaxPool3d"; }
  std::string extra_repr() const override;

 private:
  Size3 kernel_, stride_, padding_;
};

// BatchNorm2d over volumes (N, C, D, H, W): the same op (batch_norm is N-d), members and
// names (PyTorch's BatchNorm3d has the same keys). It derives from BatchNorm2d so that
// convert_sync_batchnorm, AMP's keep-f32 rule and everything else that finds BatchNorm layers
// finds it too.
class BatchNorm3d : public BatchNorm2d {
 public:
  explicit BatchNorm3d(int64_t channels, double momentum = 0.1, double eps = 1e-5)
      : BatchNorm2d(channels, momentum, eps) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "BatchNorm3d"; }
};

}  // namespace rg::nn
