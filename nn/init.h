#pragma once
// Weight initialisation as the reference implementations do it (torch.nn.init).
// All draw from the default generator, so rg::manual_seed makes a model reproducible.

#include "core/tensor.h"

namespace rg::nn::init {

enum class FanMode { fan_in, fan_out };

// fan_in = size(1) · receptive field, fan_out = size(0) · receptive field.
int64_t fan(const Tensor& weight, FanMode mode);

void uniform_(const Tensor& t, double low, double high);
void normal_(const Tensor& t, double mean, double std);
void constant_(const Tensor& t, double value);
// N(0, 2 / fan): He et al. for layers followed by ReLU (ResNet uses fan_out).
void kaiming_normal_(const Tensor& weight, FanMode mode = FanMode::fan_out);
// U(-b, b), b = sqrt(6 / ((1 + a²) fan_in)): PyTorch's default for Linear and Conv weights
// with a = sqrt(5), which gives b = 1 / sqrt(fan_in).
void kaiming_uniform_(const Tensor& weight, double a);

}  // namespace rg::nn::init
