#include "nn/models/airbench.h"

// GCC 12 false positive inside its own AVX-512 intrinsics when Eigen's solver is inlined
// (GCC bug 105593), as in ops/conv2d/conv2d_cpu.cpp.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Eigenvalues>
#include <cmath>

#include "core/autograd.h"

namespace rg::nn {

namespace {
std::shared_ptr<Conv2d> conv3x3(int64_t in, int64_t out) {
  return std::make_shared<Conv2d>(in, out, Size2{3, 3},
                                  Conv2dOptions{.padding = {1, 1}, .bias = Bias::without});
}
int64_t scaled(int64_t w, double k) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::lround(static_cast<double>(w) * k)));
}
}  // namespace

AirbenchGroup::AirbenchGroup(int64_t in, int64_t out) {
  // By address, so that convert_sync_batchnorm can swap the BatchNorms (Module::replace_child).
  conv1_ = conv3x3(in, out);
  norm1_ = std::make_shared<BatchNorm2d>(out);
  conv2_ = conv3x3(out, out);
  norm2_ = std::make_shared<BatchNorm2d>(out);
  register_module("conv1", &conv1_);
  register_module("norm1", &norm1_);
  register_module("conv2", &conv2_);
  register_module("norm2", &norm2_);
}

Tensor AirbenchGroup::forward(const Tensor& x) {
  // Pooling before normalisation: BN and ReLU then run on a quarter of the pixels.
  Tensor y = max_pool2d(conv1_->forward(x), 2).output;
  y = norm1_->forward_relu(y);
  return norm2_->forward_relu(conv2_->forward(y));
}

Airbench::Airbench(int64_t num_classes, double width_multiplier) {
  RG_CHECK(width_multiplier > 0, "Airbench: width multiplier must be positive, got ",
           width_multiplier);
  whiten_ = register_module("whiten", std::make_shared<Conv2d>(3, 24, Size2{2, 2}));
  int64_t in = 24;
  for (int64_t w : {64, 256, 256}) {
    const int64_t out = scaled(w, width_multiplier);
    groups_.push_back(register_module("group" + std::to_string(groups_.size() + 1),
                                      std::make_shared<AirbenchGroup>(in, out)));
    in = out;
  }
  head_ = register_module("head", std::make_shared<Linear>(in, num_classes, Bias::without));
}

Tensor Airbench::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == 3 && x.size(2) >= 24 && x.size(3) >= 24,
           "Airbench: expected images (N, 3, H, W) with H, W >= 24, got ", x.describe());
  Tensor y = relu(whiten_->forward(x));
  for (auto& g : groups_) y = g->forward(y);
  y = max_pool2d(y, {y.size(2), y.size(3)}).output.flatten(1);
  // The 1/9 output scale of airbench: keeps early logits small, like a temperature.
  return head_->forward(y) * (1.0 / 9.0);
}

Tensor whitening_filters(const Tensor& images, double eps, PatchCovariance covariance) {
  RG_CHECK(images.dim() == 4 && images.size(1) == 3 && images.dtype() == DType::f32,
           "init_whitening: expected f32 images (N, 3, H, W), got ", images.describe());
  Tensor host = images.to(Device::cpu()).contiguous();
  const int64_t n = host.size(0), h = host.size(2), w = host.size(3);
  const float* px = host.data<float>();
  // Covariance of all 2x2x3 patches (12 values, ordered c, dy, dx like the conv weight).
  Eigen::Matrix<double, 12, 12> cov = Eigen::Matrix<double, 12, 12>::Zero();
  Eigen::Matrix<double, 12, 1> mean = Eigen::Matrix<double, 12, 1>::Zero();
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y + 1 < h; ++y)
      for (int64_t x = 0; x + 1 < w; ++x) {
        Eigen::Matrix<double, 12, 1> p;
        for (int c = 0; c < 3; ++c)
          for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx)
              p(c * 4 + dy * 2 + dx) = px[((i * 3 + c) * h + y + dy) * w + x + dx];
        mean += p;
        cov.noalias() += p * p.transpose();
        ++count;
      }
  RG_CHECK(count > 0, "init_whitening: no patches in ", images.describe());
  mean /= static_cast<double>(count);
  cov /= static_cast<double>(count);
  if (covariance == PatchCovariance::centered) cov -= mean * mean.transpose();
  Eigen::SelfAdjointEigenSolver<Eigen::Matrix<double, 12, 12>> eig(cov);
  std::vector<float> weight(24 * 12);
  for (int k = 0; k < 12; ++k) {
    // Largest eigenvalues first; filter k and its negation 12 + k.
    const int e = 11 - k;
    const double scale = 1.0 / std::sqrt(eig.eigenvalues()(e) + eps);
    for (int j = 0; j < 12; ++j) {
      const auto v = static_cast<float>(eig.eigenvectors()(j, e) * scale);
      weight[static_cast<std::size_t>(k * 12 + j)] = v;
      weight[static_cast<std::size_t>((12 + k) * 12 + j)] = -v;
    }
  }
  return from_vector(weight, {24, 3, 2, 2});
}

void Airbench::init_whitening(const Tensor& images, double eps) {
  const Tensor weight = whitening_filters(images, eps, PatchCovariance::centered);
  NoGradGuard no_grad;
  copy_strided(whiten_->weight_, weight.to(whiten_->weight_.device()));
  whiten_->weight_.set_requires_grad(false);
}

}  // namespace rg::nn
