#pragma once
// One training (or evaluation) run of train_cifar, as configured.

#include <string>

#include "apps/train_cifar/config.h"
#include "core/device.h"

namespace rg::apps {

// The device a process trains on: --device as given, except a bare "cuda" under mpirun, where
// each process takes the GPU of its rank on its host (cuda:<local_rank>), one GPU per process as
// Horovod's recipe pins it. "cuda:N" is taken as given on every process.
Device training_device(const std::string& device_flag, int local_rank, int local_size);

// Trains (or, with eval_only, evaluates) and writes <out>/{last,best}.safetensors,
// metrics.csv and TensorBoard events. Throws rg::Error on bad data, options or checkpoints.
int run(const TrainConfig& cfg);

}  // namespace rg::apps
