#include "nn/models/blocks.h"

#include <cmath>

namespace rg::nn {

std::shared_ptr<Conv2d> conv_kxk(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                 int64_t groups, Bias bias) {
  const int64_t pad = (kernel - 1) / 2;
  return std::make_shared<Conv2d>(
      in, out, Size2{kernel, kernel},
      Conv2dOptions{
          .stride = {stride, stride}, .padding = {pad, pad}, .groups = groups, .bias = bias});
}

std::shared_ptr<Conv2d> conv_1x1(int64_t in, int64_t out, int64_t stride, int64_t groups,
                                 Bias bias) {
  return std::make_shared<Conv2d>(
      in, out, Size2{1, 1},
      Conv2dOptions{.stride = {stride, stride}, .groups = groups, .bias = bias});
}

Tensor BnReluSequential::forward(const Tensor& x) {
  Tensor y = x;
  const auto& modules = children();
  for (std::size_t i = 0; i < modules.size(); ++i) {
    // Looked up at each call (not cached): convert_sync_batchnorm may have replaced the BN.
    auto* bn = dynamic_cast<BatchNorm2d*>(modules[i].second.get());
    if (bn && i + 1 < modules.size() && dynamic_cast<ReLU*>(modules[i + 1].second.get())) {
      y = bn->forward_relu(y);
      ++i;
    } else {
      y = modules[i].second->forward(y);
    }
  }
  return y;
}

std::shared_ptr<BnReluSequential> conv_bn_relu(std::shared_ptr<Conv2d> conv) {
  const int64_t out = conv->weight_.size(0);
  return std::make_shared<BnReluSequential>(std::vector<std::shared_ptr<Module>>{
      std::move(conv), std::make_shared<BatchNorm2d>(out), std::make_shared<ReLU>()});
}

SqueezeExcitation::SqueezeExcitation(int64_t channels, int64_t reduced, Gate gate) : gate_(gate) {
  RG_CHECK(channels > 0 && reduced > 0, "SE: channels (", channels, ") and reduced channels (",
           reduced, ") must be positive");
  se1_ = conv_1x1(channels, reduced, 1, 1, Bias::with);
  se2_ = conv_1x1(reduced, channels, 1, 1, Bias::with);
  register_module("se1", &se1_);
  register_module("se2", &se2_);
}

Tensor SqueezeExcitation::forward(const Tensor& x) {
  Tensor s = se1_->forward(adaptive_avg_pool2d(x, {1, 1}));  // (N, R, 1, 1)
  s = gate_ == Gate::relu ? relu(s) : silu(s);
  return x * sigmoid(se2_->forward(s));
}

Tensor squeeze_excite(const Tensor& x, Conv2d& fc1, Conv2d& fc2) {
  const Tensor s = relu(fc1.forward(adaptive_avg_pool2d(x, {1, 1})));
  return x * sigmoid(fc2.forward(s));
}

Tensor channel_shuffle(const Tensor& x, int64_t groups) {
  RG_CHECK(x.dim() == 4 && groups > 0 && x.size(1) % groups == 0,
           "channel_shuffle: expected (N, C, H, W) with C a multiple of groups (", groups,
           "), got ", x.describe());
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  return x.reshape({n, groups, c / groups, h, w}).transpose(1, 2).reshape({n, c, h, w});
}

int64_t round_half_even(double v) {
  return static_cast<int64_t>(std::nearbyint(v));  // the default rounding mode: to nearest even
}

}  // namespace rg::nn
