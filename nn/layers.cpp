#include "nn/layers.h"

#include <cmath>
#include <sstream>
#include <typeinfo>

#include "core/autograd.h"
#include "nn/init.h"

namespace rg::nn {

namespace {
std::string pair_str(const Size2& s) {
  return s[0] == s[1] ? std::to_string(s[0])
                      : "(" + std::to_string(s[0]) + ", " + std::to_string(s[1]) + ")";
}
void check_channels(const char* layer, int64_t in, int64_t out, int64_t groups) {
  RG_CHECK(in > 0 && out > 0 && groups > 0 && in % groups == 0 && out % groups == 0, layer,
           ": in (", in, ") and out (", out, ") channels must be positive multiples of groups (",
           groups, ")");
}

// PyTorch's default for biases: U(±1/sqrt(fan_in)) of the layer's weight.
Tensor fan_in_uniform(const Shape& shape, const Tensor& weight) {
  Tensor t = empty(shape);
  const double bound =
      1.0 / std::sqrt(static_cast<double>(init::fan(weight, init::FanMode::fan_in)));
  init::uniform_(t, -bound, bound);
  return t;
}
}  // namespace

Conv2d::Conv2d(int64_t in, int64_t out, Size2 kernel, Conv2dOptions options) : options_(options) {
  check_channels("Conv2d", in, out, options.groups);
  weight_ = empty({out, in / options.groups, kernel[0], kernel[1]});
  init::kaiming_normal_(weight_, init::FanMode::fan_out);
  register_parameter("weight", &weight_);
  if (options.bias == Bias::with) {
    bias_ = fan_in_uniform({out}, weight_);
    register_parameter("bias", &bias_);
  }
}

Tensor Conv2d::forward(const Tensor& x) {
  return conv2d(x, weight_, bias_, options_.stride, options_.padding, options_.dilation,
                options_.groups);
}

std::string Conv2d::extra_repr() const {
  std::ostringstream s;
  s << weight_.size(1) * options_.groups << ", " << weight_.size(0)
    << ", kernel=" << pair_str({weight_.size(2), weight_.size(3)})
    << ", stride=" << pair_str(options_.stride) << ", padding=" << pair_str(options_.padding);
  if (options_.groups != 1) s << ", groups=" << options_.groups;
  if (!bias_.defined()) s << ", bias=false";
  return s.str();
}

ConvTranspose2d::ConvTranspose2d(int64_t in, int64_t out, Size2 kernel,
                                 ConvTranspose2dOptions options)
    : options_(options) {
  check_channels("ConvTranspose2d", in, out, options.groups);
  weight_ = empty({in, out / options.groups, kernel[0], kernel[1]});
  init::kaiming_uniform_(weight_, std::sqrt(5.0));
  register_parameter("weight", &weight_);
  if (options.bias == Bias::with) {
    bias_ = fan_in_uniform({out}, weight_);
    register_parameter("bias", &bias_);
  }
}

Tensor ConvTranspose2d::forward(const Tensor& x) {
  return conv_transpose2d(x, weight_, bias_, options_.stride, options_.padding,
                          options_.output_padding, options_.groups, options_.dilation);
}

std::string ConvTranspose2d::extra_repr() const {
  std::ostringstream s;
  s << weight_.size(0) << ", " << weight_.size(1) * options_.groups
    << ", kernel=" << pair_str({weight_.size(2), weight_.size(3)})
    << ", stride=" << pair_str(options_.stride);
  return s.str();
}

BatchNorm2d::BatchNorm2d(int64_t channels, double momentum, double eps)
    : momentum_(momentum), eps_(eps) {
  RG_CHECK(channels > 0, "BatchNorm2d: channels must be positive, got ", channels);
  weight_ = ones({channels});
  bias_ = zeros({channels});
  running_mean_ = zeros({channels});
  running_var_ = ones({channels});
  num_batches_tracked_ = zeros({}, {DType::i64});
  register_parameter("weight", &weight_);
  register_parameter("bias", &bias_);
  register_buffer("running_mean", &running_mean_);
  register_buffer("running_var", &running_var_);
  register_buffer("num_batches_tracked", &num_batches_tracked_);
}

void count_batch(const Tensor& num_batches_tracked) {
  NoGradGuard no_grad;
  copy_strided(num_batches_tracked, add(num_batches_tracked.to(DType::f64), 1.0).to(DType::i64));
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4, "BatchNorm2d: expected input (N, C, H, W), got ", x.describe());
  if (is_training()) count_batch(num_batches_tracked_);
  return batch_norm(x, weight_, bias_, running_mean_, running_var_,
                    is_training() ? BatchNormMode::train : BatchNormMode::eval, momentum_, eps_);
}

Tensor BatchNorm2d::forward_relu(const Tensor& x) {
  if (typeid(*this) != typeid(BatchNorm2d)) return relu(forward(x));
  RG_CHECK(x.dim() == 4, "BatchNorm2d: expected input (N, C, H, W), got ", x.describe());
  if (is_training()) count_batch(num_batches_tracked_);
  return batch_norm_relu(x, weight_, bias_, running_mean_, running_var_,
                         is_training() ? BatchNormMode::train : BatchNormMode::eval, momentum_,
                         eps_);
}

std::string BatchNorm2d::extra_repr() const {
  return std::to_string(weight_.size(0));
}

Linear::Linear(int64_t in, int64_t out, Bias bias) {
  RG_CHECK(in > 0 && out > 0, "Linear: in and out features must be positive, got ", in, ", ", out);
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  weight_ = empty({out, in});
  init::uniform_(weight_, -bound, bound);
  register_parameter("weight", &weight_);
  if (bias == Bias::with) {
    bias_ = empty({out});
    init::uniform_(bias_, -bound, bound);
    register_parameter("bias", &bias_);
  }
}

Tensor Linear::forward(const Tensor& x) {
  return linear(x, weight_, bias_);
}

std::string Linear::extra_repr() const {
  return std::to_string(weight_.size(1)) + ", " + std::to_string(weight_.size(0)) +
         (bias_.defined() ? "" : ", bias=false");
}

MaxPool2d::MaxPool2d(Size2 kernel, Size2 stride, Size2 padding)
    : kernel_(kernel), stride_(stride), padding_(padding) {}

Tensor MaxPool2d::forward(const Tensor& x) {
  return max_pool2d(x, {kernel_[0], kernel_[1]}, {stride_[0], stride_[1]},
                    {padding_[0], padding_[1]})
      .output;
}

AvgPool2d::AvgPool2d(Size2 kernel, Size2 stride, Size2 padding)
    : kernel_(kernel), stride_(stride), padding_(padding) {}

Tensor AvgPool2d::forward(const Tensor& x) {
  return avg_pool2d(x, {kernel_[0], kernel_[1]}, {stride_[0], stride_[1]},
                    {padding_[0], padding_[1]});
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  return adaptive_avg_pool2d(x, {output_size_[0], output_size_[1]});
}

Tensor Dropout::forward(const Tensor& x) {
  return dropout(x, p_, is_training() ? DropoutMode::train : DropoutMode::eval);
}

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(children().size()), std::move(module));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& [_, m] : children()) y = m->forward(y);
  return y;
}

}  // namespace rg::nn
