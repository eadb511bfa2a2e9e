#include "train/trainer.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "core/allocator.h"
#include "core/trace.h"
#include "parallel/checkpoint.h"
#include "parallel/ddp.h"
#include "train/device_timer.h"
#include "train/global_batch.h"
#include "train/metrics_log.h"
#include "train/outputs.h"
#include "train/report.h"
#include "train/step_graph.h"
#include "train/tensorboard.h"
#include "train/world.h"

namespace rg::train {

namespace {
// Eager steps before the capture: the optimizer's state is made in the first, cuDNN's plans are
// timed (cudnn_benchmark) and the allocator filled by then, as PyTorch's recipe warms up.
constexpr int64_t kStepGraphWarmUp = 2;

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
  RG_CHECK(options_.accumulate_steps >= 1, options_.program,
           ": accumulate_steps must be >= 1, got ", options_.accumulate_steps);
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
        [hook = options_.during_backward, step = step_in_progress_](const Tensor& param) {
          hook(step->load(), param);
        });
  }
  step_trace_ = std::make_unique<StepTrace>(options_.trace, parts_.group);  // checks the path
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
  std::vector<Device> devices = options.dp_devices;
  if (devices.empty() && options.dp > 0)
    devices = data_parallel_devices(parts_.device.str(), options.dp, "", cuda_device_count());
  if (!devices.empty()) {
    RG_CHECK(world_size == 1, options_.program, ": --dp runs in one process; under mpirun (",
             world_size, " processes) use DDP alone");
    RG_CHECK(devices[0] == parts_.device, options_.program, ": DataParallel's first device, ",
             devices[0], ", must be the training device, ", parts_.device, " (--dp starts at ",
             "device 0)");
    RG_CHECK(static_cast<bool>(options.replica_factory), options_.program,
             ": DataParallel needs a replica factory");
    trained_ = data_parallel_ = std::make_shared<parallel::DataParallel>(
        parts_.model, options.replica_factory, devices,
        parallel::DataParallelOptions{.batch_norm = options.batch_norm});
  }
  // The timeline's forward and backward per top-level module (not under DataParallel, whose
  // replicas' spans are per device instead).
  if (step_trace_->enabled() && !data_parallel_) trained_ = traced_model(parts_.model);
  const bool zero = options.zero == ZeroStage::one;
  RG_CHECK(!zero || !data_parallel_, options_.program,
           ": --zero shards the optimizer across processes (DDP); it does not combine with --dp");
  // Gradients averaged across processes during backward. Its construction broadcasts rank
  // 0's weights again, which costs one message and guards against any rank-local drift.
  // The bucket caps are bounded by the app's options (the products fit int64).
  if (world_size > 1 || zero) {
    auto ddp = std::make_shared<parallel::DistributedDataParallel>(
        trained_, parts_.group,
        parallel::DDPOptions{
            .bucket_cap_bytes = static_cast<int64_t>(options.bucket_mb * (1 << 20)),
            .first_bucket_bytes = static_cast<int64_t>(options.first_bucket_mb * (1 << 20))});
    if (!zero && options.compression != parallel::GradCompression::none)
      ddp->register_comm_hook(parallel::compression_hook(options.compression));
    trained_ = ddp;
    ddp_ = ddp.get();
    // The app's optimizer keeps the hyperparameters (the schedule drives it); ZeRO the state.
    if (zero) {
      zero_ = std::make_unique<parallel::ZeroRedundancyOptimizer>(
          *ddp, parts_.optimizer, parts_.amp.optimizer_params(),
          options.compression == parallel::GradCompression::none
              ? std::nullopt
              : std::optional<DType>(options.compression == parallel::GradCompression::fp16
                                         ? DType::f16
                                         : DType::bf16));
      // The scaler now checks this rank's pieces, not the named parameters: an overflow is
      // reported as rank R's piece i (a name would differ from rank to rank).
      if (LossScaler* scaler = parts_.amp.scaler()) scaler->set_param_names({});
    }
  }
}

std::string Trainer::describe_optimizer_state() {
  char line[200];
  const double mib = static_cast<double>(optimizer_state_bytes()) / (1 << 20);
  if (zero_)
    std::snprintf(line, sizeof line,
                  "optimizer state %.2f MiB on rank %d: ZeRO-1, its shard of %.1f %% of the "
                  "parameters (of %d ranks)",
                  mib, parts_.group->rank(), 100 * zero_->shard_fraction(), parts_.group->size());
  else if (parts_.group->size() > 1)
    std::snprintf(line, sizeof line, "optimizer state %.2f MiB on every rank", mib);
  else  // one process (DataParallel's replicas too: the optimizer steps the primary's weights)
    std::snprintf(line, sizeof line, "optimizer state %.2f MiB", mib);
  return line;
}

// A checkpoint is written after whole epochs, so a resumed run continues its schedule only if
// an epoch has as many optimizer steps as before. Resumed on another number of ranks with the
// global batch kept, it may not: the sampler pads each rank's share of a dataset that is not a
// multiple of the global batch, and the loader drops a last partial batch. Refused before any
// log is touched; every rank computes the same verdict from the same counts.
void Trainer::check_resumed_steps_per_epoch(const data::BatchSource& train_loader) const {
  if (state_.epoch == 0) return;
  const int64_t steps = optimizer_steps(train_loader.num_batches(), options_.accumulate_steps);
  if (state_.step == state_.epoch * steps) return;
  const int64_t before = state_.step / state_.epoch;
  fail(options_.program, ": cannot resume: the checkpoint took ", state_.step,
       " optimizer steps in ", state_.epoch, " epoch(s) (", before,
       " an epoch), and an epoch here has ", steps, " (", train_loader.num_samples(),
       " samples on each of ", parts_.group->size(),
       " rank(s)): its schedule would not fit. Resume on a number of ranks that gives ", before,
       " steps an epoch, or train on a multiple of the global batch (--train-limit)");
}

EpochResult Trainer::evaluate(data::BatchSource& test_loader, const EvalPass& pass) {
  return train::evaluate(*parts_.model, test_loader, task_, pass, parts_.amp, parts_.device,
                         options_.progress, *parts_.group);
}

const TrainingState& Trainer::fit(data::BatchSource& train_loader, data::BatchSource& test_loader) {
  std::optional<CsvLog> csv;
  std::optional<TensorBoardWriter> tensorboard;
  std::optional<TensorBoardWriter> step_board;  // per optimizer step, under mixed precision
  std::optional<CsvLog> step_csv;               // the same, as loss_scale.csv
  check_resumed_steps_per_epoch(train_loader);
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
      step_csv.emplace(options_.out + "/" + kLossScaleCsv);
    }
  }
  const std::size_t best = best_index(task_);
  const StepContext context{parts_.device, parts_.amp};
  std::unique_ptr<StepGraph> step_graph;
  if (options_.cuda_graphs) {
    StepGraph::check(options_.program, parts_.device, parts_.amp,
                     !data_parallel_ && !zero_ && parts_.group->size() == 1, step_trace_->enabled(),
                     optimizer(), options_.accumulate_steps);
    step_graph = std::make_unique<StepGraph>(parts_.device, kStepGraphWarmUp);
  }
  int64_t epochs_this_run = 0;
  std::vector<double> train_device_seconds;  // this run's epochs
  double last_eval_device_seconds = 0;
  for (int64_t epoch = state_.epoch; epoch < options_.epochs; ++epoch) {
    // The device loader's epoch set-up (the order's copy, the draws) belongs to the epoch's time.
    DeviceTimer epoch_setup(parts_.device);
    train_loader.start_epoch(epoch);
    epoch_setup.stop();
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
            [&](int64_t step) {
              step_in_progress_->store(step);
              step_trace_->before_step(step);
              if (options_.before_step) options_.before_step(step);
            },
        .after_step =
            [&](int64_t step) {
              if (options_.after_step) options_.after_step(step);
              step_trace_->after_step(step);
            },
        // ZeRO: the norm over every rank's shard of the averaged gradients.
        .clip_gradients = zero_ ? std::function<void(double)>(
                                      [this](double max_norm) { zero_->clip_grad_norm(max_norm); })
                                : nullptr,
        .step_graph = step_graph.get(),
        .accumulate_steps = options_.accumulate_steps,
        .ddp = ddp_};
    const int64_t first_step = state_.step + 1;
    EpochResult train =
        train_epoch(*trained_, train_loader, task_, optimizer(), parts_.scheduler, parts_.amp,
                    parts_.device, epoch_options, state_.step, *parts_.group);
    train.device_seconds += epoch_setup.seconds();
    train_device_seconds.push_back(train.device_seconds);
    if (LossScaler* scaler = parts_.amp.scaler()) {
      // Every rank takes its record, so that none keeps it growing; rank 0 writes it.
      const std::vector<ScalerStep> record = scaler->take_history();
      if (lead()) log_scaler_steps(record, *step_board, *step_csv);
    }
    trace::Span evaluating("train", "evaluate");
    const EpochResult test = evaluate(test_loader, {.last = epoch + 1 == options_.epochs});
    evaluating.finish();
    last_eval_device_seconds = test.device_seconds;
    const int64_t peak = memory_stats(parts_.device).peak_bytes;
    peak_memory_bytes_ = std::max(peak_memory_bytes_, peak);
    state_.epoch = epoch + 1;
    const bool improved = test.values[best] > state_.best_accuracy;
    if (improved) state_.best_accuracy = test.values[best];
    for (const auto& [key, value] : options_.checkpoint_extra) state_.extra[key] = value;

    // ZeRO's state is every rank's: gathered on rank 0 for the checkpoint (a collective).
    if (zero_) zero_->consolidate_state_dict(0);
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
      if (improved) {
        trace::Span best("checkpoint", "write best.safetensors");
        save_checkpoint(options_.out + "/best.safetensors", *parts_.model, nullptr, nullptr, state_,
                        &parts_.amp, during_write("best.safetensors"));
      }
      trace::Span last("checkpoint", "write last.safetensors");
      save_checkpoint(options_.out + "/last.safetensors", *parts_.model, &optimizer(),
                      &parts_.scheduler, state_, &parts_.amp, during_write("last.safetensors"));
    }
    if (options_.stop_after_epochs > 0 && ++epochs_this_run >= options_.stop_after_epochs) break;
  }
  step_trace_->finish();  // a window the run did not reach the end of
  if (lead() && step_graph)
    std::cout << "cuda graphs: " << step_graph->replays() << " steps replayed, "
              << step_graph->eager_steps() << " eager (warm-up and partial batches)" << std::endl;
  if (lead() && !train_device_seconds.empty())
    std::cout << device_time_line(parts_.device, train_device_seconds, last_eval_device_seconds)
              << std::endl;
  return state_;
}

std::string device_time_line(const Device& device, const std::vector<double>& train_seconds,
                             double last_eval_seconds) {
  double train = 0;
  std::string epochs;
  for (double s : train_seconds) {
    train += s;
    epochs += (epochs.empty() ? "" : " ") + format_fixed(s, 3);
  }
  return "device time: training " + format_fixed(train, 3) + " s + last evaluation " +
         format_fixed(last_eval_seconds, 3) + " s = " + format_fixed(train + last_eval_seconds, 3) +
         " s (" + (device.is_cuda() ? "CUDA events" : "wall clock") + " on " + device.str() +
         "; epochs " + epochs + ")";
}

}  // namespace rg::train
