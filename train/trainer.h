#pragma once
// The training loop both apps share. An app is the Horovod tutorial's shape:
//
//   auto group = train::join_world({...});                          // init
//   data::DataLoader train_loader(...), test_loader(...);            // data (DistributedSampler)
//   auto model = nn::make_model(...); model->to(device);             // model
//   MixedPrecision amp(*model, ...); SGD optimizer(amp.optimizer_params(), ...);
//   train::Trainer trainer({group, device, model, amp, optimizer, *schedule}, task, options);
//   trainer.resume(checkpoint);                                      // state from rank 0
//   trainer.wrap({.dp = 0, .bucket_mb = 25});                        // DDP under mpirun, --dp
//   trainer.fit(train_loader, test_loader);                          // loop
//
// fit() runs the epochs: the task's steps through the loss scaler and the optimizer, the LR
// schedule once per step, evaluation summed over ranks, and on rank 0 the progress bar, the
// summary line, metrics.csv, TensorBoard and the checkpoints last.safetensors (every epoch)
// and best.safetensors (when Task::best_metric improves). A resumed run cuts the logs back to
// its checkpoint's epoch first (train/outputs.h), so they read as one uninterrupted run.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "data/dataloader.h"
#include "nn/module.h"
#include "optim/amp.h"
#include "optim/checkpoint.h"
#include "optim/optim.h"
#include "parallel/data_parallel.h"
#include "parallel/process_group.h"
#include "train/epoch.h"
#include "train/task.h"

namespace rg::train {

// What the app built; the Trainer keeps references to all of it.
struct TrainerParts {
  std::shared_ptr<parallel::ProcessGroup> group;
  Device device;
  std::shared_ptr<nn::Module> model;  // unwrapped, on `device`, in its final dtypes
  MixedPrecision& amp;
  Optimizer& optimizer;
  LRScheduler& scheduler;  // stepped once per optimizer step
};

struct TrainerOptions {
  std::string program = "train";  // names the program in messages
  std::string out{};              // checkpoints, metrics.csv, TensorBoard events
  int64_t epochs = 1;
  int64_t stop_after_epochs = 0;  // >0: stop after this many epochs of this run, as if killed
  double clip_grad_norm = 0;      // 0: off
  bool progress = true;           // the live progress bar (on rank 0 only, whatever this says)
  bool resumed = false;           // the run continues one in `out`: its logs are cut back first
  // Called on every rank before each optimizer step with its number (from 1 across epochs).
  std::function<void(int64_t step)> before_step{};
  // Called on every rank after each optimizer step (and the schedule's) with its number.
  std::function<void(int64_t step)> after_step{};
  // Fault points for tests (train_cifar --fault ...:at=backward / at=checkpoint). Empty: none.
  // during_backward: on every rank during each step's backward, with the step's number, from
  // the gradient hook of the model's middle parameter (half-way through backward).
  std::function<void(int64_t step)> during_backward{};
  // during_checkpoint_write: on rank 0 while it writes each checkpoint, the new file complete
  // under its temporary name and not yet in place; with the steps of the epoch it ends and the
  // file's name ("last.safetensors").
  std::function<void(int64_t first_step, int64_t last_step, const std::string& file)>
      during_checkpoint_write{};
  // Written into every checkpoint's metadata (train.<key>): e.g. the run's configuration.
  std::map<std::string, std::string> checkpoint_extra{};
};

// Data parallelism around the model. DataParallel (threads over devices of the training
// device's kind, in one process) goes inside DDP (across processes).
struct WrapOptions {
  int dp = 0;  // DataParallel over devices 0..dp-1; 0: off
  // Builds one more copy of the model for each DataParallel replica (required when dp > 0).
  std::function<std::shared_ptr<nn::Module>()> replica_factory{};
  parallel::BatchNormSync batch_norm = parallel::BatchNormSync::per_device;  // under DataParallel
  double bucket_mb = 25;  // DDP's gradient bucket cap
};

enum class Restore { everything, weights_only };

class Trainer {
 public:
  // Throws rg::Error when the task lacks a step or an evaluation, or names a best metric it
  // does not report.
  Trainer(TrainerParts parts, Task task, TrainerOptions options);

  // Rank 0 reads `checkpoint` (empty: a fresh start) and every rank gets its state: the
  // weights, and with Restore::everything the optimizer, schedule, loss scaler and the epoch
  // to continue from. Prints what it resumed on rank 0. Call before wrap().
  void resume(const std::string& checkpoint, Restore what = Restore::everything);
  // Wraps the model for training: DataParallel when options.dp > 0 (one process only), then
  // DDP when the world has more than one process (which broadcasts rank 0's weights again).
  void wrap(const WrapOptions& options);

  // Trains from the current state to options.epochs (or stop_after_epochs more).
  const TrainingState& fit(data::DataLoader& train_loader, data::DataLoader& test_loader);
  // One evaluation of the unwrapped model over the loader (all ranks' samples).
  EpochResult evaluate(data::DataLoader& test_loader, const EvalPass& pass = {.last = true});

  const TrainingState& state() const { return state_; }
  // The largest per-epoch peak of the training device's allocator in this run (bytes).
  int64_t peak_memory_bytes() const { return peak_memory_bytes_; }
  parallel::DataParallel* data_parallel() const { return data_parallel_.get(); }

 private:
  bool lead() const { return parts_.group->rank() == 0; }

  TrainerParts parts_;
  Task task_;
  TrainerOptions options_;
  std::shared_ptr<nn::Module> trained_;  // the model, or its wrapper
  std::shared_ptr<parallel::DataParallel> data_parallel_;
  TrainingState state_;
  int64_t peak_memory_bytes_ = 0;
  // The step being run, for the during_backward hook (which the model may outlive).
  std::shared_ptr<std::atomic<int64_t>> step_in_progress_ =
      std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace rg::train
