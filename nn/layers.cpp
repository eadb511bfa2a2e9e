#include "nn/layers.h"

#include <cmath>
#include <sstream>
#include <typeinfo>

#include "core/autograd.h"
#include "nn/init.h"
#include "ops/batch_norm/batch_norm_count.h"

namespace rg::nn {

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
  batch_norm_count_batch(num_batches_tracked);
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

Tensor BatchNorm2d::forward_gelu(const Tensor& x) {
  if (typeid(*this) != typeid(BatchNorm2d)) return gelu(forward(x));
  RG_CHECK(x.dim() == 4, "BatchNorm2d: expected input (N, C, H, W), got ", x.describe());
  if (is_training()) count_batch(num_batches_tracked_);
  return batch_norm_gelu(x, weight_, bias_, running_mean_, running_var_,
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
