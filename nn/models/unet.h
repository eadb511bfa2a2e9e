#pragma once
// UNet (Ronneberger et al. 2015) in 2-D and 3-D, as milesial's Pytorch-UNet builds it
// (unet_parts.py: DoubleConv, Down, Up, OutConv), with its parameter names so that its
// checkpoints' keys match ours:
//
//   inc:   DoubleConv(in_channels -> w0)                         w_i = base_width · 2^i
//   down_i (i = 1..depth): max-pool 2, DoubleConv(w_{i-1} -> w_i)   (the last: w_depth / f)
//   up_j   (j = 1..depth): upsample x2 the deeper map, pad it to the skip's size (F.pad, when
//          a size was odd), concatenate [skip, upsampled] on channels, DoubleConv
//   outc:  1x1 convolution w0 -> num_classes (logits; no activation)
//
// DoubleConv = (3x3 conv, padding 1 [-> BN] -> ReLU) x 2 (3x3x3 in 3-D). The decoder upsamples
// either by a transposed convolution (kernel 2, stride 2, halving the channels) or by bilinear /
// trilinear interpolation (align_corners=True, as Pytorch-UNet) followed by the DoubleConv;
// the interpolating decoder keeps the channels, so, as in Pytorch-UNet, the deepest map and
// every decoder output but the last have half the width (f = 2) and the DoubleConv's middle
// width is half its input's.
// Convolutions have no bias where a BatchNorm follows (Pytorch-UNet's choice); without BN they
// have one.
//
// Shapes: x (N, in_channels, H, W) -> (N, num_classes, H, W); volumes (N, C, D, H, W) alike.
// Any size works: odd sizes lose a row to the pool and get it back from the pad.
// tools/unet_reference.py holds the PyTorch twin whose parameter names, shapes and counts
// tests/nn/unet_test.cpp compares with (tests/fixtures/unet_parameters.txt).

#include <memory>
#include <vector>

#include "nn/layers.h"

namespace rg::nn {

enum class UNetDecoder { transposed_conv, interpolate };
enum class UNetNorm { batch_norm, none };

struct UNetConfig {
  int64_t dims = 2;  // 2: images (N, C, H, W); 3: volumes (N, C, D, H, W)
  int64_t in_channels = 3;
  int64_t num_classes = 2;
  int64_t depth = 4;        // number of poolings (and of decoder steps)
  int64_t base_width = 64;  // channels of the first DoubleConv
  UNetDecoder decoder = UNetDecoder::transposed_conv;
  UNetNorm norm = UNetNorm::batch_norm;
};

// Pytorch-UNet's UNet(n_channels=3, n_classes=2): depth 4, base width 64, transposed convs, BN.
UNetConfig unet2d_config(int64_t in_channels = 3, int64_t num_classes = 2);
// The seeds' UNet3d(n_channels=1, n_classes=1): depth 3, base width 32, transposed convs, BN.
UNetConfig unet3d_config(int64_t in_channels = 1, int64_t num_classes = 1);

// (conv 3x3 [-> BN] -> ReLU) x 2, in a Sequential named "double_conv" (indices as PyTorch's).
class DoubleConv : public Module {
 public:
  DoubleConv(int64_t dims, int64_t in, int64_t out, int64_t mid, UNetNorm norm);
  Tensor forward(const Tensor& x) override { return double_conv_->forward(x); }
  std::string type_name() const override { return "DoubleConv"; }

 private:
  std::shared_ptr<Sequential> double_conv_;
};

// max-pool 2 -> DoubleConv, as Sequential "maxpool_conv" (0: the pool, 1: the DoubleConv).
class UNetDown : public Module {
 public:
  UNetDown(int64_t dims, int64_t in, int64_t out, UNetNorm norm);
  Tensor forward(const Tensor& x) override { return maxpool_conv_->forward(x); }
  std::string type_name() const override { return "Down"; }

 private:
  std::shared_ptr<Sequential> maxpool_conv_;
};

// up(deep) -> pad to skip's size -> cat([skip, up], channels) -> DoubleConv.
class UNetUp : public Module {
 public:
  UNetUp(int64_t dims, int64_t in, int64_t out, UNetDecoder decoder, UNetNorm norm);
  Tensor forward(const Tensor& deep, const Tensor& skip);
  // A decoder step needs its skip connection: the one-input forward refuses.
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Up"; }

 private:
  std::shared_ptr<Module> up_;  // ConvTranspose2d/3d, or Upsample (no parameters)
  std::shared_ptr<DoubleConv> conv_;
};

class UNet : public Module {
 public:
  explicit UNet(const UNetConfig& config);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "UNet"; }
  const UNetConfig& config() const { return config_; }

 private:
  UNetConfig config_;
  std::shared_ptr<DoubleConv> inc_;
  std::vector<std::shared_ptr<UNetDown>> downs_;  // "down1" ... "down<depth>"
  std::vector<std::shared_ptr<UNetUp>> ups_;      // "up1" ... "up<depth>"
  std::shared_ptr<Module> outc_;                  // "outc": holds "conv", a 1x1 convolution
};

}  // namespace rg::nn
