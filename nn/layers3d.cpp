#include "nn/layers3d.h"

namespace rg::nn {

namespace {
std::string triple_str(const Size3& s) {
  return s[0] == s[1] && s[1] == s[2] ? std::to_string(s[0])
                                      : "(" + std::to_string(s[0]) + ", " + std::to_string(s[1]) +
                                            ", " + std::to_string(s[2]) + ")";
}
Pool3dSize pool_size(const Size3& s) {
  return {s[0], s[1], s[2]};
}
}  // namespace

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
