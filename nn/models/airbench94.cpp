#include "nn/models/airbench94.h"

#include <cmath>

#include "core/autograd.h"
#include "nn/init.h"
#include "nn/models/airbench.h"

namespace rg::nn {

namespace {
// BatchNorm as airbench94.py builds it: see the header.
constexpr double kBatchNormMomentum = 1 - 0.6;
constexpr double kBatchNormEps = 1e-12;

// PyTorch's Conv2d initialisation, then the first min(in, out) filters made identity maps
// (torch.nn.init.dirac_ on weight[:in]): weight[i, i, kH/2, kW/2] = 1, the rest of filter i 0.
void init_identity_conv(Conv2d& conv) {
  NoGradGuard no_grad;
  Tensor& w = conv.weight_;  // (out, in, kH, kW)
  init::kaiming_uniform_(w, std::sqrt(5.0));
  const int64_t out = w.size(0), in = w.size(1), kh = w.size(2), kw = w.size(3);
  Tensor host = w.to(Device::cpu()).contiguous();
  float* v = host.data<float>();
  for (int64_t i = 0; i < std::min(in, out); ++i) {
    std::fill(v + i * in * kh * kw, v + (i + 1) * in * kh * kw, 0.0f);
    v[((i * in + i) * kh + kh / 2) * kw + kw / 2] = 1.0f;
  }
  copy_strided(w, host.to(w.device()));
  if (conv.bias_.defined()) init::constant_(conv.bias_, 0.0);
}

std::shared_ptr<Conv2d> identity_conv3x3(int64_t in, int64_t out) {
  auto conv = std::make_shared<Conv2d>(in, out, Size2{3, 3},
                                       Conv2dOptions{.padding = {1, 1}, .bias = Bias::without});
  init_identity_conv(*conv);
  return conv;
}

std::shared_ptr<BatchNorm2d> batch_norm(int64_t channels) {
  auto norm = std::make_shared<BatchNorm2d>(channels, kBatchNormMomentum, kBatchNormEps);
  norm->weight_.set_requires_grad(false);  // stays 1: only the bias trains
  return norm;
}
}  // namespace

Airbench94Group::Airbench94Group(int64_t in, int64_t out) {
  // By address, so that convert_sync_batchnorm can swap the BatchNorms (Module::replace_child).
  conv1_ = identity_conv3x3(in, out);
  norm1_ = batch_norm(out);
  conv2_ = identity_conv3x3(out, out);
  norm2_ = batch_norm(out);
  register_module("conv1", &conv1_);
  register_module("norm1", &norm1_);
  register_module("conv2", &conv2_);
  register_module("norm2", &norm2_);
}

Tensor Airbench94Group::forward(const Tensor& x) {
  // BatchNorm→GELU as one op (batch_norm_gelu): the step's largest pointwise traffic.
  Tensor y = max_pool2d(conv1_->forward(x), 2).output;
  y = norm1_->forward_gelu(y);
  return norm2_->forward_gelu(conv2_->forward(y));
}

Airbench94::Airbench94(int64_t num_classes) {
  whiten_ = register_module("whiten", std::make_shared<Conv2d>(3, 24, Size2{2, 2}));
  // Its filters come from data (init_whitening); the bias starts at 0 as airbench94.py's Conv.
  init_identity_conv(*whiten_);
  int64_t in = 24;
  for (int64_t out : {64, 256, 256}) {
    groups_.push_back(register_module("group" + std::to_string(groups_.size() + 1),
                                      std::make_shared<Airbench94Group>(in, out)));
    in = out;
  }
  head_ = register_module("head", std::make_shared<Linear>(in, num_classes, Bias::without));
}

Tensor Airbench94::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3 && x.size(2) >= 24 && x.size(3) >= 24,
           "Airbench94: expected images (N, 3, H, W) with H, W >= 24, got ", x.describe());
  Tensor y = gelu(whiten_->forward(x));
  for (auto& g : groups_) y = g->forward(y);
  y = max_pool2d(y, {y.size(2), y.size(3)}).output.flatten(1);
  // airbench94's output scale 1/9: keeps early logits small, like a temperature.
  return head_->forward(y) * (1.0 / 9.0);
}

void Airbench94::init_whitening(const Tensor& images, double eps) {
  const Tensor weight = whitening_filters(images, eps, PatchCovariance::uncentered);
  NoGradGuard no_grad;
  copy_strided(whiten_->weight_, weight.to(whiten_->weight_.device()));
  whiten_->weight_.set_requires_grad(false);
}

}  // namespace rg::nn
