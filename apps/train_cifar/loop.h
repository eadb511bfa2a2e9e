#pragma once
// The pieces of train_cifar's loop: one training epoch, one evaluation, the LR schedule from
// the config, logging of an epoch, and where data and checkpoints are found.

#include <memory>
#include <string>

#include "apps/train_cifar/config.h"
#include "core/metrics_log.h"
#include "core/tensorboard.h"
#include "data/dataloader.h"
#include "nn/module.h"
#include "optim/optim.h"
#include "parallel/distributed_sampler.h"

namespace rg::apps {

struct EpochResult {
  double loss = 0;      // mean over samples
  double accuracy = 0;  // in [0, 1]
  int64_t samples = 0;
  double seconds = 0;
  double images_per_second = 0;
  // Mixed precision (O1-O3): the loss scale at the end of the epoch, steps skipped so far.
  double loss_scale = 0;
  int64_t skipped_steps = 0;
};

// Runs one epoch of SGD steps (the loader's epoch must be started) at amp's precision; `step`
// counts optimizer steps across epochs. Loss, accuracy and images/s are over the samples of
// every process of `group` (a collective: every rank calls it). Rank 0 reports each step the
// loss scaler skips, naming the first parameter whose gradient overflowed.
EpochResult train_epoch(nn::Module& model, data::DataLoader& loader, Optimizer& optimizer,
                        LRScheduler& scheduler, MixedPrecision& amp, const TrainConfig& cfg,
                        const Device& device, int64_t epoch, int64_t& step,
                        parallel::ProcessGroup& group);
// Loss and accuracy over the test set, in eval mode, without gradients: each rank evaluates
// its share (the loader draws from `sampler`), padded duplicates are left out, and the totals
// are summed over `group`, so every test image counts exactly once.
// With cfg.tta, logits are averaged over each image and its mirror image.
EpochResult evaluate(nn::Module& model, data::DataLoader& loader,
                     const parallel::DistributedSampler& sampler, const MixedPrecision& amp,
                     const Device& device, const TrainConfig& cfg, parallel::ProcessGroup& group);
// `n` images of the data set, evenly spaced, with the test transform: (n, C, H, W) f32.
Tensor sample_images(const data::Dataset& dataset, int64_t n);
// Mirrors a batch of images (N, C, H, W) left-right.
Tensor flip_horizontal(const Tensor& images);

// Per-step schedule: cosine / multistep / onecycle / constant, behind a linear warm-up when
// warmup_epochs > 0.
std::unique_ptr<LRScheduler> make_schedule(const TrainConfig& cfg, Optimizer& optimizer,
                                           int64_t steps_per_epoch);

void log_epoch(CsvLog& csv, TensorBoardWriter& tensorboard, int64_t epoch, int64_t epochs,
               double lr, const EpochResult& train, const EpochResult& test, double best);

// cfg.data, or the first of the usual places that holds CIFAR-10; the error lists them.
std::string find_cifar10(const std::string& configured);
// The checkpoint to resume from: cfg.resume, or <out>/last.safetensors for "auto" when present.
std::string resume_path(const TrainConfig& cfg);

}  // namespace rg::apps
