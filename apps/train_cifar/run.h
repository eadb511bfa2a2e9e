#pragma once
// One training (or evaluation) run of train_cifar, as configured.

#include "apps/train_cifar/config.h"

namespace rg::apps {

// Trains (or, with eval_only, evaluates) and writes <out>/{last,best}.safetensors,
// metrics.csv and TensorBoard events. Throws rg::Error on bad data, options or checkpoints.
int run(const TrainConfig& cfg);

}  // namespace rg::apps
