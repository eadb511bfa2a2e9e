#pragma once
// One training epoch and one evaluation pass of the shared loop, whatever the task: the task
// (train/task.h) turns batches into losses and metrics; these functions step the optimizer
// through the loss scaler, draw the progress bar and combine the figures of all ranks.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/batch_source.h"
#include "optim/optim.h"
#include "parallel/process_group.h"
#include "train/task.h"

namespace rg::parallel {
class DistributedDataParallel;
}  // namespace rg::parallel

namespace rg::train {

class StepGraph;

struct EpochResult {
  double loss = 0;             // mean over samples
  std::vector<double> values;  // the task's metrics after the loss (train: sum / samples)
  int64_t samples = 0;
  double seconds = 0;
  // The device's own time for the epoch's steps or the evaluation: CUDA events on a GPU (no
  // wait added), the wall clock on the CPU (train/device_timer.h).
  double device_seconds = 0;
  double images_per_second = 0;
  // Mixed precision (O1-O3): the loss scale at the end of the epoch, steps skipped so far.
  double loss_scale = 0;
  int64_t skipped_steps = 0;
};

struct EpochOptions {
  std::string program{};      // names the program in messages
  std::string label{};        // the progress bar's, e.g. "epoch 3/30"
  double clip_grad_norm = 0;  // 0: off
  bool progress = true;       // draw the bar
  // Called on every rank before each step with its number (from 1 across epochs): e.g. the
  // fault injection of train_cifar --fault. Empty: nothing.
  std::function<void(int64_t step)> before_step{};
  // Called on every rank after each step (the optimizer's and the schedule's) with its number:
  // e.g. airbench94's lookahead, which pulls the weights towards their average. Empty: nothing.
  std::function<void(int64_t step)> after_step{};
  // Clips the unscaled gradients to this norm; empty: clip_grad_norm over
  // amp.optimizer_params() (ZeRO's clips over every rank's shard instead).
  std::function<void(double max_norm)> clip_gradients{};
  // --cuda-graphs: runs the steps, captured once and replayed (train/step_graph.h); null: eager.
  StepGraph* step_graph = nullptr;
  // --accumulate-steps: loader batches (micro-batches) per optimizer step (train/accumulate.h);
  // the epoch's last step may hold fewer.
  int64_t accumulate_steps = 1;
  // The model's DDP wrapper, if any: every micro-batch but a step's last runs under no_sync().
  parallel::DistributedDataParallel* ddp = nullptr;
};

// Runs one epoch of optimizer steps (the loader's epoch must be started) at amp's precision —
// batches from the host DataLoader or the DeviceLoader (data/device_loader.h) alike, each step
// over options.accumulate_steps of them; `step` counts optimizer steps across epochs and the
// schedule advances once per step.
// Loss, metrics and images/s are over the samples of every process of `group` (a collective:
// every rank calls it). Rank 0 reports each step the loss scaler skips, naming the first
// parameter whose gradient overflowed. Throws when the running loss stops being finite.
EpochResult train_epoch(nn::Module& model, data::BatchSource& loader, const Task& task,
                        Optimizer& optimizer, LRScheduler& scheduler, MixedPrecision& amp,
                        const Device& device, const EpochOptions& options, int64_t& step,
                        parallel::ProcessGroup& group);

// The task's evaluation over the loader, in eval mode and without gradients; values holds
// Task::eval_metrics after the loss. A collective: every rank calls it.
EpochResult evaluate(nn::Module& model, data::BatchSource& loader, const Task& task,
                     const EvalPass& pass, const MixedPrecision& amp, const Device& device,
                     bool progress, parallel::ProcessGroup& group);

}  // namespace rg::train
