#pragma once
// What a task tells the shared training loop (train/trainer.h): how one batch becomes a loss,
// which figures to add up while training and while evaluating, and what else to log. The loop
// owns everything else — epochs, optimizer steps, the loss scaler, DDP, progress bar, CSV,
// TensorBoard, checkpoints — so a classifier (apps/train_cifar) and a segmenter share it.
//
// Batches are the loader's own (data::Batch): a classifier reads `labels`, a segmenter `masks`.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "data/dataloader.h"
#include "nn/module.h"
#include "optim/amp.h"
#include "parallel/process_group.h"
#include "train/tensorboard.h"

namespace rg::train {

// How a metric reads in the progress bar and the epoch summary: a fraction shown as a percent
// ("acc 93.21%"), a plain number ("dice 0.9123"), or not at all (log_only: figures such as a
// Dice per class, which would flood the summary line). CSV and TensorBoard get the raw value.
enum class Display { percent, plain, log_only };

// A figure a task reports: `name` is its CSV column and TensorBoard tag suffix ("accuracy"
// gives train_accuracy, test/accuracy), `label` its short name on screen ("acc").
struct Metric {
  std::string name;
  std::string label;
  Display display = Display::plain;
};

// Where a task's callbacks run: the training device and the run's precision policy.
struct StepContext {
  const Device& device;
  const MixedPrecision& amp;
};

// One training batch's result. The loop backpropagates `loss`, and adds `sums` up over the
// epoch and over all ranks; each train metric is reported as its sum / samples.
struct StepOutput {
  Tensor loss;          // 0-d, the batch mean: what backward starts from
  int64_t samples = 0;  // in this batch on this rank
  Tensor sums;          // (M) f64 on the device, one per Task::train_metrics; undefined if M = 0
};

// Evaluation of one pass over the test loader. The loop runs it in eval mode, without
// gradients; the task decides what to accumulate and how ranks combine it.
class Evaluation {
 public:
  virtual ~Evaluation() = default;
  // Adds one batch of this rank's share.
  virtual void add(nn::Module& model, const data::Batch& batch, const StepContext& context) = 0;
  // The metrics over all ranks, each sample counted once (a collective: every rank calls it),
  // in the order of Task::eval_metrics; `samples` is the number of samples they cover.
  struct Totals {
    std::vector<double> values;
    int64_t samples = 0;
  };
  virtual Totals all_ranks(parallel::ProcessGroup& group) = 0;
};

// Which evaluation this is: a task may do more in the last (airbench94 augments only its last).
struct EvalPass {
  bool last = true;  // after the run's last epoch, or a lone evaluation (--eval-only)
};

// Called on rank 0 after each epoch's scalars are logged: images, histograms, anything more.
struct EpochLog {
  int64_t epoch = 0;  // completed epochs, the TensorBoard step of this epoch's scalars
  TensorBoardWriter& tensorboard;
  nn::Module& model;  // the unwrapped model
  const StepContext& context;
};

struct Task {
  // Forward and loss of one training batch (the loop zeroes gradients before and steps after).
  std::function<StepOutput(nn::Module& model, const data::Batch& batch, const StepContext&)> step;
  // The metrics of StepOutput::sums, in order ("loss" comes first by itself).
  std::vector<Metric> train_metrics;
  // A fresh evaluation for one pass over the test set.
  std::function<std::unique_ptr<Evaluation>(const EvalPass&)> evaluation;
  // The metrics of Evaluation::Totals::values, in order; the first must be "loss".
  std::vector<Metric> eval_metrics;
  // The eval metric that picks best.safetensors: higher is better (accuracy, Dice).
  std::string best_metric;
  // Optional: more logging on rank 0 after each epoch.
  std::function<void(const EpochLog&)> log;
};

}  // namespace rg::train
