#pragma once
// The volumetric layers (N, C, D, H, W) of the 3-D UNet: Conv3d, ConvTranspose3d, MaxPool3d,
// BatchNorm3d.
// They mirror their 2-D twins in layers.h (same options, same initialisation) and call the
// op of the same name in ops/. Kept apart from layers.h so that file stays the 2-D CNN kit.

#include <array>

#include "nn/layers.h"

namespace rg::nn {

using Size3 = std::array<int64_t, 3>;  // {depth, height, width}

struct Conv3dOptions {
  Size3 stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  int64_t groups = 1;
  Bias bias = Bias::with;
};

// Weight (out, in/groups, kD, kH, kW) initialised Kaiming-normal with fan_out, as Conv2d; bias
// U(±1/sqrt(fan_in)) as PyTorch.
class Conv3d : public Module {
 public:
  Conv3d(int64_t in, int64_t out, Size3 kernel, const Conv3dOptions& options = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Conv3d"; }
  std::string extra_repr() const override;
  Tensor weight_, bias_;

 private:
  Conv3dOptions options_;
};

struct ConvTranspose3dOptions {
  Size3 stride{1, 1, 1}, padding{0, 0, 0}, output_padding{0, 0, 0}, dilation{1, 1, 1};
  int64_t groups = 1;
  Bias bias = Bias::with;
};

// Options are taken by const reference: passed by value, a designated-initialised
// ConvTranspose3dOptions{.stride = {2, 2, 2}} arrived with a corrupted padding in the
// -march=native (AVX-512) build with GCC 12 (tests/nn/layers3d_test.cpp caught it; the
// -DRG_NATIVE=OFF build was fine). Not reduced to a compiler bug report yet.
// Weight (in, out/groups, kD, kH, kW), PyTorch's default (Kaiming-uniform, a = sqrt(5)) init,
// as ConvTranspose2d.
class ConvTranspose3d : public Module {
 public:
  ConvTranspose3d(int64_t in, int64_t out, Size3 kernel,
                  const ConvTranspose3dOptions& options = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ConvTranspose3d"; }
  std::string extra_repr() const override;
  Tensor weight_, bias_;

 private:
  ConvTranspose3dOptions options_;
};

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
