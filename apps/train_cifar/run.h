#pragma once
// One training (or evaluation) run of train_cifar, as configured.

#include <string>

#include "apps/train_cifar/config.h"
#include "train/world.h"

namespace rg::apps {

using train::training_device;  // --device under mpirun: train/world.h

// Trains (or, with eval_only, evaluates) and writes <out>/{last,best}.safetensors,
// metrics.csv and TensorBoard events. Throws rg::Error on bad data, options or checkpoints.
int run(const TrainConfig& cfg);

}  // namespace rg::apps
