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
#include <vector>

#include "data/batch_source.h"
#include "nn/module.h"
#include "optim/amp.h"
#include "optim/checkpoint.h"
#include "optim/optim.h"
#include "parallel/data_parallel.h"
#include "parallel/ddp.h"
#include "parallel/process_group.h"
#include "parallel/zero.h"
#include "train/epoch.h"
#include "train/step_trace.h"
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
  // during_backward: on every rank during each step's backward, with the step's number and
  // the parameter, from the gradient hook of the model's middle parameter (half-way through
  // backward; before DDP's own hook on it, so what it does to the gradient is reduced too).
  std::function<void(int64_t step, const Tensor& param)> during_backward{};
  // during_checkpoint_write: on rank 0 while it writes each checkpoint, the new file complete
  // under its temporary name and not yet in place; with the steps of the epoch it ends and the
  // file's name ("last.safetensors").
  std::function<void(int64_t first_step, int64_t last_step, const std::string& file)>
      during_checkpoint_write{};
  // Written into every checkpoint's metadata (train.<key>): e.g. the run's configuration.
  std::map<std::string, std::string> checkpoint_extra{};
  // --trace FILE --trace-steps A:B: a timeline of those steps (train/step_trace.h).
  TraceOptions trace{};
  // --cuda-graphs: each step captured once in a CUDA graph and replayed (train/step_graph.h).
  bool cuda_graphs = false;
  // --accumulate-steps: loader batches per optimizer step (train/accumulate.h). The schedule
  // the app made counts optimizer steps (train/global_batch.h: optimizer_steps).
  int64_t accumulate_steps = 1;
};

// --zero: ZeRO stage 1 (parallel/zero.h) — each rank keeps 1/N of the optimizer state.
enum class ZeroStage { off, one };

// Data parallelism around the model. DataParallel (threads over devices of the training
// device's kind, in one process) goes inside DDP (across processes).
struct WrapOptions {
  // DataParallel over `dp` devices of the training device's kind (data_parallel_devices in
  // train/world.h: cpu:0..dp-1, or the GPUs, shared when there are fewer than dp); 0: off.
  int dp = 0;
  // Or over these devices, one per replica, the first the training device (a device may repeat:
  // its replicas share it); overrides dp when not empty.
  std::vector<Device> dp_devices{};
  // Builds one more copy of the model for each DataParallel replica (required when dp > 0).
  std::function<std::shared_ptr<nn::Module>()> replica_factory{};
  parallel::BatchNormSync batch_norm = parallel::BatchNormSync::per_device;  // under DataParallel
  double bucket_mb = 25;       // DDP's gradient bucket cap
  double first_bucket_mb = 1;  // DDP's first bucket's cap (launched early in backward)
  parallel::GradCompression compression = parallel::GradCompression::none;  // DDP's buckets
  // ZeRO-1 over DDP's buckets (also with one process: DDP then wraps a world of one).
  ZeroStage zero = ZeroStage::off;
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

  // Trains from the current state to options.epochs (or stop_after_epochs more). The loaders
  // are the host DataLoader or the DeviceLoader (data/device_loader.h). At the end rank 0
  // prints the device's time (train/device_timer.h): every epoch's training, the last
  // evaluation, and their sum — what airbench94 reports as its time.
  const TrainingState& fit(data::BatchSource& train_loader, data::BatchSource& test_loader);
  // One evaluation of the unwrapped model over the loader (all ranks' samples).
  EpochResult evaluate(data::BatchSource& test_loader, const EvalPass& pass = {.last = true});

  const TrainingState& state() const { return state_; }
  // The largest per-epoch peak of the training device's allocator in this run (bytes).
  int64_t peak_memory_bytes() const { return peak_memory_bytes_; }
  parallel::DataParallel* data_parallel() const { return data_parallel_.get(); }
  // What steps: the app's optimizer, or ZeRO's over it after wrap({.zero = one}).
  Optimizer& optimizer() { return zero_ ? *zero_ : parts_.optimizer; }
  parallel::ZeroRedundancyOptimizer* zero() const { return zero_.get(); }
  // This rank's optimizer state (momentum, moments), in bytes: 1/N of it under ZeRO.
  int64_t optimizer_state_bytes() { return optimizer().state_bytes(); }
  // One line for the run's summary: this rank's optimizer state and, under ZeRO, its share.
  std::string describe_optimizer_state();

 private:
  bool lead() const { return parts_.group->rank() == 0; }
  void check_resumed_steps_per_epoch(const data::BatchSource& train_loader) const;

  TrainerParts parts_;
  Task task_;
  TrainerOptions options_;
  std::shared_ptr<nn::Module> trained_;  // the model, or its wrapper
  std::shared_ptr<parallel::DataParallel> data_parallel_;
  std::unique_ptr<parallel::ZeroRedundancyOptimizer> zero_;
  parallel::DistributedDataParallel* ddp_ = nullptr;  // in trained_, when wrapped in DDP
  std::unique_ptr<StepTrace> step_trace_;
  TrainingState state_;
  int64_t peak_memory_bytes_ = 0;
  // The step being run, for the during_backward hook (which the model may outlive).
  std::shared_ptr<std::atomic<int64_t>> step_in_progress_ =
      std::make_shared<std::atomic<int64_t>>(0);
};

// "device time: training 3.412 s + last evaluation 0.101 s = 3.513 s (CUDA events on cuda:0;
// epochs 0.402 0.334 ...)": the line fit() ends with, which scripts/gpu_quick_check.sh reads.
std::string device_time_line(const Device& device, const std::vector<double>& train_seconds,
                             double last_eval_seconds);

}  // namespace rg::train
