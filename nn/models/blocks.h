#pragma once
// Pieces the pytorch-cifar models share, each a composition of existing ops (no op of its own):
// convolution shorthands, a Sequential that fuses its BatchNorm→ReLU pairs, squeeze-and-excitation
// and the channel shuffle. Names are the keys kuangliu's modules give their parameters.

#include <memory>
#include <string>

#include "nn/layers.h"

namespace rg::nn {

// A k×k convolution with padding (k − 1) / 2 ("same" at stride 1), no bias unless asked.
std::shared_ptr<Conv2d> conv_kxk(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1,
                                 int64_t groups = 1, Bias bias = Bias::without);
// A 1x1 convolution, no padding.
std::shared_ptr<Conv2d> conv_1x1(int64_t in, int64_t out, int64_t stride = 1, int64_t groups = 1,
                                 Bias bias = Bias::without);

// A Sequential (children "0", "1", ... as torch.nn.Sequential) whose forward runs a BatchNorm2d
// followed by a ReLU as one fused batch_norm_relu (nn/layers.h's forward_relu): pytorch-cifar's
// nn.Sequential(conv, BatchNorm2d, ReLU(True), ...) stems and branches keep their keys
// ("base.0.weight", "base.1.running_mean") and skip one pass over memory per pair.
class BnReluSequential : public Sequential {
 public:
  using Sequential::Sequential;
  Tensor forward(const Tensor& x) override;
};

// conv, BatchNorm2d, ReLU as children "0", "1", "2" (the ReLU has no parameters).
std::shared_ptr<BnReluSequential> conv_bn_relu(std::shared_ptr<Conv2d> conv);

enum class Gate { relu, swish };  // the activation between SE's two 1x1 convolutions

// Squeeze-and-excitation (Hu et al. 2018) as pytorch-cifar's RegNet and EfficientNet write it:
//   s = sigmoid(se2(act(se1(avg(x)))))  (N, C, 1, 1);  y = x · s, broadcast over H, W.
// se1: C -> R and se2: R -> C are 1x1 convolutions with bias. act is ReLU (RegNet) or swish
// (EfficientNet).
class SqueezeExcitation : public Module {
 public:
  SqueezeExcitation(int64_t channels, int64_t reduced, Gate gate);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "SE"; }

 private:
  std::shared_ptr<Conv2d> se1_, se2_;
  Gate gate_;
};

// The gate of SENet's blocks (fc1, fc2: 1x1 convolutions with bias, ReLU between), applied to x:
// x · sigmoid(fc2(relu(fc1(avg(x))))). SENet's blocks hold fc1 and fc2 themselves.
Tensor squeeze_excite(const Tensor& x, Conv2d& fc1, Conv2d& fc2);

// ShuffleNet's channel shuffle: (N, C, H, W) -> (N, g, C/g, H, W) -> swap g and C/g -> (N, C, H,
// W), so that channel c·g + k of the result is channel k·C/g + c of x. A copy (transpose, then
// reshape); differentiable through the view ops.
Tensor channel_shuffle(const Tensor& x, int64_t groups);

// Round half to even, as Python's round() (pytorch-cifar's RegNet sizes its layers with it).
int64_t round_half_even(double v);

}  // namespace rg::nn
