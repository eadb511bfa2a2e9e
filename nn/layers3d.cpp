#include "nn/layers3d.h"

#include <cmath>
#include <sstream>

#include "nn/init.h"

namespace rg::nn {

namespace {
std::string triple_str(const Size3& s) {
  return s[0] == s[1] && s[1] == s[2] ? std::to_string(s[0])
                                      : "(" + std::to_string(s[0]) + ", " + std::to_string(s[1]) +
                                            ", " + std::to_string(s[2]) + ")";
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
Pool3dSize pool_size(const Size3& s) {
  return {s[0], s[1], s[2]};
}
}  // namespace

Conv3d::Conv3d(int64_t in, int64_t out, Size3 kernel, const Conv3dOptions& options)
    : options_(options) {
  check_channels("Conv3d", in, out, options.groups);
  weight_ = empty({out, in / options.groups, kernel[0], kernel[1], kernel[2]});
  init::kaiming_normal_(weight_, init::FanMode::fan_out);
  register_parameter("weight", &weight_);
  if (options.bias == Bias::with) {
    bias_ = fan_in_uniform({out}, weight_);
    register_parameter("bias", &bias_);
  }
}

Tensor Conv3d::forward(const Tensor& x) {
  return conv3d(x, weight_, bias_, options_.stride, options_.padding, options_.dilation,
                options_.groups);
}

std::string Conv3d::extra_repr() const {
  std::ostringstream s;
  s << weight_.size(1) * options_.groups << ", " << weight_.size(0)
    << ", kernel=" << triple_str({weight_.size(2), weight_.size(3), weight_.size(4)})
    << ", stride=" << triple_str(options_.stride) << ", padding=" << triple_str(options_.padding);
  if (options_.groups != 1) s << ", groups=" << options_.groups;
  if (!bias_.defined()) s << ", bias=false";
  return s.str();
}

ConvTranspose3d::ConvTranspose3d(int64_t in, int64_t out, Size3 kernel,
                                 const ConvTranspose3dOptions& options)
    : options_(options) {
  check_channels("ConvTranspose3d", in, out, options.groups);
  weight_ = empty({in, out / options.groups, kernel[0], kernel[1], kernel[2]});
  init::kaiming_uniform_(weight_, std::sqrt(5.0));
  register_parameter("weight", &weight_);
  if (options.bias == Bias::with) {
    bias_ = fan_in_uniform({out}, weight_);
    register_parameter("bias", &bias_);
  }
}

Tensor ConvTranspose3d::forward(const Tensor& x) {
  return conv_transpose3d(x, weight_, bias_, options_.stride, options_.padding,
                          options_.output_padding, options_.groups, options_.dilation);
}

std::string ConvTranspose3d::extra_repr() const {
  std::ostringstream s;
  s << weight_.size(0) << ", " << weight_.size(1) * options_.groups
    << ", kernel=" << triple_str({weight_.size(2), weight_.size(3), weight_.size(4)})
    << ", stride=" << triple_str(options_.stride);
  if (!bias_.defined()) s << ", bias=false";
  return s.str();
}

MaxPool3d::MaxPool3d(Size3 kernel, Size3 stride, Size3 padding)
    : kernel_(kernel), stride_(stride == Size3{0, 0, 0} ? kernel : stride), padding_(padding) {}

Tensor MaxPool3d::forward(const Tensor& x) {
  return max_pool3d(x, pool_size(kernel_), pool_size(stride_), pool_size(padding_)).output;
}

std::string MaxPool3d::extra_repr() const {
  return "kernel=" + triple_str(kernel_) + ", stride=" + triple_str(stride_) +
         ", padding=" + triple_str(padding_);
}

Tensor BatchNorm3d::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 5, "BatchNorm3d: expected input (N, C, D, H, W), got ", x.describe());
  if (is_training()) count_batch(num_batches_tracked_);
  return batch_norm(x, weight_, bias_, running_mean_, running_var_,
                    is_training() ? BatchNormMode::train : BatchNormMode::eval, momentum_, eps_);
}

}  // namespace rg::nn
