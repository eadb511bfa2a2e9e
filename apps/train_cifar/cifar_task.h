#pragma once
// What is CIFAR-10 classification about train_cifar's loop (train/task.h): the loss of a batch
// (cross-entropy with label smoothing), accuracy while training, and an evaluation summed over
// ranks with optional test-time augmentation — plus where the data is found.

#include <string>

#include "apps/train_cifar/config.h"
#include "data/batch_views.h"
#include "data/dataset.h"
#include "parallel/distributed_sampler.h"
#include "train/model_card.h"
#include "train/task.h"

namespace rg::apps {

// Where an evaluation adds up its correct predictions and losses: on the host, the logits
// read back batch by batch (parallel::DistributedEvaluator: the CPU path), or on the training
// device, read once per evaluation (train::DeviceEvaluator: GPUs, and the device data path).
enum class EvalCounts { host, device };

// Train metric "accuracy"; eval metrics "loss", "accuracy"; best.safetensors by accuracy. The
// evaluation draws from the test loader whose sampler is `test_sampler` (kept alive by the app).
train::Task cifar_task(const TrainConfig& cfg, const parallel::DistributedSampler& test_sampler,
                       EvalCounts counts);

// What train_cifar's checkpoints record of the model and its inputs (train/model_card.h):
// the model and classes, and the test transform's preprocessing (CIFAR-10's mean and std) at
// the size of the test images.
train::ModelCard cifar_model_card(const TrainConfig& cfg, const data::Dataset& train_set,
                                  const data::Dataset& test_set);

// `n` images of the data set, evenly spaced, with the test transform: (n, C, H, W) f32.
Tensor sample_images(const data::Dataset& dataset, int64_t n);
// The test-time views, on any device (data/batch_views.h): a batch (N, C, H, W) mirrored
// left-right, and shifted by `by` = ±1 pixel along both axes with reflection at the border,
// out[y][x] = in[y + by][x + by] (airbench94's TTA crops of F.pad(x, 1, 'reflect')).
using data::flip_horizontal;
using data::shift_reflect;

// cfg.data, or the first of the usual places that holds CIFAR-10; the error lists them.
std::string find_cifar10(const std::string& configured);

}  // namespace rg::apps
