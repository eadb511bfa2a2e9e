#include "train/trainer.h"

#include <filesystem>
#include <iostream>
#include <optional>

#include "core/allocator.h"
#include "parallel/checkpoint.h"
#include "parallel/ddp.h"
#include "train/metrics_log.h"
#include "train/outputs.h"
#include "train/report.h"
#include "train/tensorboard.h"

namespace rg::train {

namespace {
// The index of the best metric within EpochResult::values (eval_metrics[0] is the loss).
std::size_t best_index(const Task& task) {
  for (std::size_t m = 1; m < task.eval_metrics.size(); ++m)
    if (task.eval_metrics[m].name == task.best_metric) return m - 1;
  fail("train: the task's best metric '", task.best_metric,
       "' is not among its eval metrics (after the loss)");
}
}  // namespace

Trainer::Trainer(TrainerParts parts, Task task, TrainerOptions options)
    : parts_(std::move(parts)), task_(std::move(task)), options_(std::move(options)) {
  RG_CHECK(parts_.group && parts_.model, options_.program,
           ": the trainer needs a group and a model");
  RG_CHECK(task_.step && task_.evaluation, options_.program,
           ": the task needs a step and an evaluation");
  RG_CHECK(!task_.eval_metrics.empty() && task_.eval_metrics[0].name == "loss", options_.program,
           ": the task's eval metrics must start with \"loss\"");
  best_index(task_);
  trained_ = parts_.model;
  if (!lead()) options_.progress = false;
  if (options_.during_backward) {
    std::vector<Tensor> params;
    for (const Tensor& p : parts_.model->parameters())
      if (p.requires_grad()) params.push_back(p);
    RG_CHECK(!params.empty(), options_.program,
             ": during_backward needs a parameter that gets a gradient");
    // Parameters are in forward order, so backward reaches the middle one half-way.
    params[params.size() / 2].register_post_accumulate_hook(
        [hook = options_.during_backward, step = step_in_progress_](const Tensor&) {
          hook(step->load());
        });
  }
}

void Trainer::resume(const std::string& checkpoint, Restore what) {
  RG_CHECK(trained_ == parts_.model, options_.program, ": resume() before wrap()");
  const bool all = what == Restore::everything;
  if (auto resumed = parallel::load_checkpoint_on_root(
          checkpoint, *parts_.model, all ? &parts_.optimizer : nullptr,
          all ? &parts_.scheduler : nullptr, all ? &parts_.amp : nullptr, 0, *parts_.group)) {
    state_ = resumed->state;
    if (lead())
      std::cout << "resumed from " << resumed->path << " after epoch " << state_.epoch << "\n";
  }
}

void Trainer::wrap(const WrapOptions& options) {
  const int world_size = parts_.group->size();
  if (options.dp > 0) {
    RG_CHECK(world_size == 1, options_.program, ": --dp runs in one process; under mpirun (",
             world_size, " processes) use DDP alone");
    RG_CHECK(parts_.device.index == 0, options_.program, ": --dp ", options.dp,
             " starts at device 0, not ", parts_.device);
    RG_CHECK(static_cast<bool>(options.replica_factory), options_.program,
             ": DataParallel needs a replica factory");
    std::vector<Device> devices;
    for (int i = 0; i < options.dp; ++i) devices.push_back({parts_.device.type, i});
    trained_ = data_parallel_ = std::make_shared<parallel::DataParallel>(
        parts_.model, options.replica_factory, devices,
        parallel::DataParallelOptions{.batch_norm = options.batch_norm});
  }
  // Gradients averaged across processes during backward. Its construction broadcasts rank
  // 0's weights again, which costs one message and guards against any rank-local drift.
  // bucket_mb is bounded by the app's options (the product fits int64).
  if (world_size > 1)
    trained_ = std::make_shared<parallel::DistributedDataParallel>(
        parts_.model, parts_.group,
        parallel::DDPOptions{.bucket_cap_bytes =
                                 static_cast<int64_t>(options.bucket_mb * (1 << 20))});
}

EpochResult Trainer::evaluate(data::DataLoader& test_loader, const EvalPass& pass) {
  return train::evaluate(*parts_.model, test_loader, task_, pass, parts_.amp, parts_.device,
                         options_.progress, *parts_.group);
}

const TrainingState& Trainer::fit(data::DataLoader& train_loader, data::DataLoader& test_loader) {
  std::optional<CsvLog> csv;
  std::optional<TensorBoardWriter> tensorboard;
  std::optional<TensorBoardWriter> step_board;  // per optimizer step, under mixed precision
  if (lead()) {
    // Epochs after the checkpoint's are run again: their rows and events from before the
    // interruption go, so that the logs read as one uninterrupted run.
    if (options_.resumed) truncate_logs(options_.out, state_.epoch, state_.step);
    csv.emplace(options_.out + "/metrics.csv");
    tensorboard.emplace(options_.out);
    if (parts_.amp.scaler()) {
      const std::string steps = options_.out + "/" + kStepLogFolder;
      std::filesystem::create_directories(steps);
      step_board.emplace(steps);
    }
  }
  const std::size_t best = best_index(task_);
  const StepContext context{parts_.device, parts_.amp};
  int64_t epochs_this_run = 0;
  for (int64_t epoch = state_.epoch; epoch < options_.epochs; ++epoch) {
    train_loader.start_epoch(epoch);
    // The seeds' tables report memory per card and epoch: each epoch's peak starts afresh.
    reset_peak_memory(parts_.device);
    if (data_parallel_) {
      data_parallel_->reset_times();
      for (const Device& d : data_parallel_->devices()) reset_peak_memory(d);
    }
    const double epoch_lr = parts_.optimizer.lr(0);
    const EpochOptions epoch_options{
        .program = options_.program,
        .label = "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(options_.epochs),
        .clip_grad_norm = options_.clip_grad_norm,
        .progress = options_.progress,
        .before_step =
            [this](int64_t step) {
              step_in_progress_->store(step);
              if (options_.before_step) options_.before_step(step);
            },
        .after_step = options_.after_step};
    const int64_t first_step = state_.step + 1;
    const EpochResult train =
        train_epoch(*trained_, train_loader, task_, parts_.optimizer, parts_.scheduler, parts_.amp,
                    parts_.device, epoch_options, state_.step, *parts_.group);
    if (LossScaler* scaler = parts_.amp.scaler()) {
      // Every rank takes its record, so that none keeps it growing; rank 0 writes it.
      const std::vector<ScalerStep> record = scaler->take_history();
      if (lead()) log_scaler_steps(record, *step_board);
    }
    const EpochResult test = evaluate(test_loader, {.last = epoch + 1 == options_.epochs});
    const int64_t peak = memory_stats(parts_.device).peak_bytes;
    peak_memory_bytes_ = std::max(peak_memory_bytes_, peak);
    state_.epoch = epoch + 1;
    const bool improved = test.values[best] > state_.best_accuracy;
    if (improved) state_.best_accuracy = test.values[best];
    for (const auto& [key, value] : options_.checkpoint_extra) state_.extra[key] = value;

    if (lead()) {
      log_epoch(task_,
                {.epoch = epoch + 1,
                 .epochs = options_.epochs,
                 .lr = epoch_lr,
                 .train = train,
                 .test = test,
                 .best = state_.best_accuracy,
                 .peak_memory_bytes = peak},
                *csv, *tensorboard);
      if (task_.log) {
        task_.log({.epoch = epoch + 1,
                   .tensorboard = *tensorboard,
                   .model = *parts_.model,
                   .context = context});
        tensorboard->flush();
      }
      if (data_parallel_) std::cout << data_parallel_->report();
      const auto during_write = [&](const std::string& file) -> BeforeRename {
        if (!options_.during_checkpoint_write) return {};
        return [&, file](const std::string&) {
          options_.during_checkpoint_write(first_step, state_.step, file);
        };
      };
      // last.safetensors goes last: it is what a resumed run starts from, so everything else
      // the epoch writes (its log rows, best.safetensors) must be on disk before it. A crash
      // before its rename replays the epoch, which writes the same again; written the other way
      // round, a crash between the two files would leave best.safetensors without the epoch
      // the resumed run's best_accuracy already counts, for good.
      // With amp: under O2 the f32 masters are the weights worth keeping.
      if (improved)
        save_checkpoint(options_.out + "/best.safetensors", *parts_.model, nullptr, nullptr, state_,
                        &parts_.amp, during_write("best.safetensors"));
      save_checkpoint(options_.out + "/last.safetensors", *parts_.model, &parts_.optimizer,
                      &parts_.scheduler, state_, &parts_.amp, during_write("last.safetensors"));
    }
    if (options_.stop_after_epochs > 0 && ++epochs_this_run >= options_.stop_after_epochs) break;
  }
  return state_;
}

}  // namespace rg::train
