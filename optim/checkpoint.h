#pragma once
// Training checkpoints: one safetensors file holding
//   - the model's parameters and buffers under their own names ("layer1.0.conv1.weight"; never
//     a wrapper prefix, so a file saved from DDP loads into a plain model),
//   - the optimizer's state ("optim.*", see optimizer.h),
//   - in __metadata__: the scheduler ("lr_scheduler"), the default generator ("rng.seed",
//     "rng.offset"), the epoch and step counters, the best accuracy so far, and any extra
//     entries the caller adds (e.g. the run's config),
//   - with mixed precision (optim/amp.h): the loss scaler ("scaler.*" metadata) and, under O2,
//     the f32 master weights ("amp.master.<name>") — the true weights of an O2 run.
// Files are written atomically (temporary file, fsync, rename): a crash leaves the previous
// checkpoint intact.

#include <map>
#include <string>

#include "core/safetensors.h"
#include "nn/module.h"
#include "optim/amp.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"

namespace rg {

struct TrainingState {
  int64_t epoch = 0;                         // epochs completed
  int64_t step = 0;                          // optimizer steps taken
  double best_accuracy = 0;                  // best test accuracy so far, in [0, 1]
  std::map<std::string, std::string> extra;  // caller-defined metadata
};

// Pass nullptr for what the run does not have (evaluation-only weights have no optimizer).
// `before_rename` runs once the new file is complete, before it replaces `path`
// (core/safetensors.h): a fault point for tests.
void save_checkpoint(const std::string& path, const nn::Module& model, const Optimizer* optimizer,
                     const LRScheduler* scheduler, const TrainingState& state,
                     const MixedPrecision* amp = nullptr, const BeforeRename& before_rename = {});

// Loads into existing objects. The model is loaded strictly: a checkpoint of another model is
// refused with the missing, unexpected and mismatched keys listed. Restores the default
// generator. Throws rg::Error naming the file. Where the file holds O2 master weights, the
// model gets them (rounded to its dtype), with or without `amp`; with `amp`, its masters and
// scaler are restored too (its level and dtype must match the file's).
TrainingState load_checkpoint(const std::string& path, nn::Module& model, Optimizer* optimizer,
                              LRScheduler* scheduler, MixedPrecision* amp = nullptr);

}  // namespace rg
