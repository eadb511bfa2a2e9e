#include "nn/init.h"

#include <cmath>

#include "core/autograd.h"

namespace rg::nn::init {

int64_t fan(const Tensor& weight, FanMode mode) {
  RG_CHECK(weight.dim() >= 2, "init: fan needs a weight with at least 2 dims, got ",
           weight.describe());
  const int64_t receptive = weight.numel() / (weight.size(0) * weight.size(1));
  return (mode == FanMode::fan_in ? weight.size(1) : weight.size(0)) * receptive;
}

namespace {
// Writes a freshly drawn tensor into t (any float dtype), outside autograd.
void assign(const Tensor& t, const Tensor& values) {
  NoGradGuard no_grad;
  copy_strided(t, values.to(t.device()));
}

Tensor affine(Tensor x, double scale, double shift) {
  std::vector<double> v = x.to_vector<double>();
  for (double& e : v) e = e * scale + shift;
  return from_vector(v, x.shape(), {DType::f64});
}
}  // namespace

void uniform_(const Tensor& t, double low, double high) {
  assign(t, affine(rand(t.shape(), {DType::f64}), high - low, low));
}

void normal_(const Tensor& t, double mean, double std) {
  assign(t, affine(randn(t.shape(), {DType::f64}), std, mean));
}

void constant_(const Tensor& t, double value) {
  NoGradGuard no_grad;
  fill_(t, value);
}

void kaiming_normal_(const Tensor& weight, FanMode mode) {
  normal_(weight, 0.0, std::sqrt(2.0 / static_cast<double>(fan(weight, mode))));
}

void kaiming_uniform_(const Tensor& weight, double a) {
  const double bound =
      std::sqrt(6.0 / ((1 + a * a) * static_cast<double>(fan(weight, FanMode::fan_in))));
  uniform_(weight, -bound, bound);
}

}  // namespace rg::nn::init
