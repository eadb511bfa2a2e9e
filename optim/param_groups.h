#pragma once
// Parameter groups by role, for recipes that treat some parameters apart.

#include <vector>

#include "nn/module.h"
#include "optim/sgd.h"

namespace rg {

// Splits `params` (the optimizer's, parallel to model.named_parameters(): the parameters
// themselves or their f32 masters) into two SGD groups: every parameter but BatchNorm biases
// with `options`, then the BatchNorm biases with lr · scale and weight_decay / scale — so their
// steps are `scale` times larger while the decay per step (lr · weight_decay) stays the same
// (airbench94's bias_scaler 64). scale 1: one group of all. Throws rg::Error when `params` and
// the model's parameters differ in number, or when a group would be empty.
std::vector<ParamGroup<SGDOptions>> norm_bias_groups(nn::Module& model,
                                                     const std::vector<Tensor>& params,
                                                     const SGDOptions& options, double scale);

}  // namespace rg
