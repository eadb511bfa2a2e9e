#include "nn/models/unet.h"

#include <string>

#include "nn/layers3d.h"

namespace rg::nn {

namespace {

// The layers of one dimensionality, chosen at run time (UNetConfig::dims): the same code builds
// the 2-D and the 3-D net. `f` is called as f.template operator()<N>() for N = dims.
template <class F>
std::shared_ptr<Module> of_rank(int64_t dims, F&& f) {
  if (dims == 2) return f.template operator()<2>();
  return f.template operator()<3>();
}

// 3x3(x3) convolution with padding 1.
std::shared_ptr<Module> conv3(int64_t dims, int64_t in, int64_t out, Bias bias) {
  return of_rank(dims, [&]<int N>() -> std::shared_ptr<Module> {
    return std::make_shared<ConvNd<N>>(
        in, out, same_on_every_axis<N>(3),
        ConvOptions<N>{.padding = same_on_every_axis<N>(1), .bias = bias});
  });
}

std::shared_ptr<Module> norm_layer(int64_t dims, int64_t channels) {
  if (dims == 2) return std::make_shared<BatchNorm2d>(channels);
  return std::make_shared<BatchNorm3d>(channels);
}

std::shared_ptr<Module> max_pool2x(int64_t dims) {
  if (dims == 2) return std::make_shared<MaxPool2d>(Size2{2, 2}, Size2{2, 2});
  return std::make_shared<MaxPool3d>(Size3{2, 2, 2});
}

// 2x upsampling by a transposed convolution of kernel and stride 2.
std::shared_ptr<Module> up2x(int64_t dims, int64_t in, int64_t out) {
  return of_rank(dims, [&]<int N>() -> std::shared_ptr<Module> {
    return std::make_shared<ConvTransposeNd<N>>(
        in, out, same_on_every_axis<N>(2),
        ConvTransposeOptions<N>{.stride = same_on_every_axis<N>(2)});
  });
}

// 1x1(x1) convolution.
std::shared_ptr<Module> conv1(int64_t dims, int64_t in, int64_t out) {
  return of_rank(dims, [&]<int N>() -> std::shared_ptr<Module> {
    return std::make_shared<ConvNd<N>>(in, out, same_on_every_axis<N>(1));
  });
}

// Pytorch-UNet's OutConv: a module holding "conv", so the keys read "outc.conv.weight".
class OutConv : public Module {
 public:
  OutConv(int64_t dims, int64_t in, int64_t out) : conv_(conv1(dims, in, out)) {
    register_module("conv", &conv_);
  }
  Tensor forward(const Tensor& x) override { return conv_->forward(x); }
  std::string type_name() const override { return "OutConv"; }

 private:
  std::shared_ptr<Module> conv_;
};

}  // namespace

UNetConfig unet2d_config(int64_t in_channels, int64_t num_classes) {
  return {.dims = 2, .in_channels = in_channels, .num_classes = num_classes};
}

UNetConfig unet3d_config(int64_t in_channels, int64_t num_classes) {
  return {.dims = 3,
          .in_channels = in_channels,
          .num_classes = num_classes,
          .depth = 3,
          .base_width = 32};
}

DoubleConv::DoubleConv(int64_t dims, int64_t in, int64_t out, int64_t mid, UNetNorm norm) {
  const bool bn = norm == UNetNorm::batch_norm;
  const Bias bias = bn ? Bias::without : Bias::with;  // a bias before BN is cancelled by it
  double_conv_ = std::make_shared<Sequential>();
  double_conv_->push_back(conv3(dims, in, mid, bias));
  if (bn) double_conv_->push_back(norm_layer(dims, mid));
  double_conv_->push_back(std::make_shared<ReLU>());
  double_conv_->push_back(conv3(dims, mid, out, bias));
  if (bn) double_conv_->push_back(norm_layer(dims, out));
  double_conv_->push_back(std::make_shared<ReLU>());
  register_module("double_conv", &double_conv_);
}

UNetDown::UNetDown(int64_t dims, int64_t in, int64_t out, UNetNorm norm) {
  maxpool_conv_ = std::make_shared<Sequential>();
  maxpool_conv_->push_back(max_pool2x(dims));
  maxpool_conv_->push_back(std::make_shared<DoubleConv>(dims, in, out, out, norm));
  register_module("maxpool_conv", &maxpool_conv_);
}

UNetUp::UNetUp(int64_t dims, int64_t in, int64_t out, UNetDecoder decoder, UNetNorm norm) {
  if (decoder == UNetDecoder::transposed_conv) {
    // The transposed conv halves the channels, so [skip, up] has `in` channels again.
    up_ = up2x(dims, in, in / 2);
    conv_ = std::make_shared<DoubleConv>(dims, in, out, out, norm);
  } else {
    // Interpolation keeps the channels: the deeper map already has half of `in`
    // (UNet's factor f), and the DoubleConv narrows through in / 2.
    up_ = std::make_shared<Upsample>(
        2, dims == 2 ? UpsampleMode::bilinear : UpsampleMode::trilinear, AlignCorners::on);
    conv_ = std::make_shared<DoubleConv>(dims, in, out, in / 2, norm);
  }
  register_module("up", &up_);
  register_module("conv", &conv_);
}

Tensor UNetUp::forward(const Tensor& deep, const Tensor& skip) {
  Tensor up = up_->forward(deep);
  // Odd sizes on the way down leave the upsampled map a row short: pad it (F.pad's order, the
  // last dim first; the extra element goes to the far side, as Pytorch-UNet's diff - diff / 2).
  std::vector<int64_t> amounts;
  bool any = false;
  for (int64_t d = skip.dim() - 1; d >= 2; --d) {
    const int64_t diff = skip.size(d) - up.size(d);
    amounts.push_back(diff / 2);
    amounts.push_back(diff - diff / 2);
    any = any || diff != 0;
  }
  if (any) up = pad(up, amounts);
  return conv_->forward(cat({skip, up}, 1));
}

Tensor UNetUp::forward(const Tensor& x) {
  fail("Up: a decoder step takes two inputs, forward(deep, skip); got one, ", x.describe());
}

UNet::UNet(const UNetConfig& config) : config_(config) {
  const auto& c = config;
  RG_CHECK(c.dims == 2 || c.dims == 3, "UNet: dims must be 2 or 3, got ", c.dims);
  RG_CHECK(c.in_channels > 0 && c.num_classes > 0,
           "UNet: in_channels and num_classes must be positive, got ", c.in_channels, " and ",
           c.num_classes);
  RG_CHECK(c.depth >= 1 && c.depth <= 8, "UNet: depth must be between 1 and 8, got ", c.depth);
  RG_CHECK(c.base_width >= 2 && c.base_width % 2 == 0,
           "UNet: base_width must be a positive even number (the decoder halves it), got ",
           c.base_width);
  const int64_t f = c.decoder == UNetDecoder::interpolate ? 2 : 1;
  auto width = [&](int64_t i) { return c.base_width << i; };
  inc_ = std::make_shared<DoubleConv>(c.dims, c.in_channels, width(0), width(0), c.norm);
  register_module("inc", &inc_);
  for (int64_t i = 1; i <= c.depth; ++i) {
    const int64_t out = i == c.depth ? width(i) / f : width(i);
    downs_.push_back(register_module(
        "down" + std::to_string(i), std::make_shared<UNetDown>(c.dims, width(i - 1), out, c.norm)));
  }
  for (int64_t j = 1; j <= c.depth; ++j) {
    const int64_t in = width(c.depth - j + 1);
    const int64_t out = j == c.depth ? width(0) : width(c.depth - j) / f;
    ups_.push_back(register_module("up" + std::to_string(j),
                                   std::make_shared<UNetUp>(c.dims, in, out, c.decoder, c.norm)));
  }
  outc_ = std::make_shared<OutConv>(c.dims, width(0), c.num_classes);
  register_module("outc", &outc_);
}

Tensor UNet::forward(const Tensor& x) {
  RG_CHECK(x.dim() == config_.dims + 2 && x.size(1) == config_.in_channels,
           "UNet: expected input (N, ", config_.in_channels,
           config_.dims == 2 ? ", H, W)" : ", D, H, W)", ", got ", x.describe());
  for (int64_t d = 2; d < x.dim(); ++d)
    RG_CHECK(x.size(d) >> config_.depth >= 1,
             "UNet: every spatial size must be at least 2^depth = ", int64_t{1} << config_.depth,
             " (each level pools by 2), got ", x.describe());
  std::vector<Tensor> skips{inc_->forward(x)};
  for (auto& down : downs_) skips.push_back(down->forward(skips.back()));
  Tensor y = skips.back();
  for (std::size_t j = 0; j < ups_.size(); ++j)
    y = ups_[j]->forward(y, skips[skips.size() - 2 - j]);
  return outc_->forward(y);
}

}  // namespace rg::nn
