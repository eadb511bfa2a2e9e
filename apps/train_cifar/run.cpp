// train_cifar's run(): the shape of the Horovod CIFAR tutorial — init, data, model, wrap,
// loop. The loop itself (epochs, AMP, DDP, logs, checkpoints, resume) is the library's
// (train/trainer.h); what is CIFAR about it is in cifar_task.h.
//
// The same code runs alone (a world of one process) and under mpirun (scripts/mpirun.sh N):
// each process trains on its share of every epoch (DistributedSampler), DDP averages the
// gradients, rank 0 alone prints, logs and writes checkpoints, and every reported metric is
// over all processes.
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "apps/train_cifar/cifar_data.h"
#include "apps/train_cifar/cifar_task.h"
#include "apps/train_cifar/run.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "data/cifar10.h"
#include "nn/models/airbench.h"
#include "nn/models/airbench94.h"
#include "nn/models/zoo.h"
#include "parallel/faults.h"
#include "parallel/found_inf.h"
#include "parallel/horovod.h"
#include "parallel/sync_batch_norm.h"
#include "train/common_options.h"
#include "train/global_batch.h"
#include "train/metrics_log.h"
#include "train/outputs.h"
#include "train/pretrained.h"
#include "train/report.h"
#include "train/schedule.h"
#include "train/trainer.h"
#include "train/warm_up.h"
#include "train/world.h"

namespace rg::apps {

int run(const TrainConfig& options) {
  // ---- init: the world, this process's device ------------------------------------------------
  auto world = train::join_world(options.world_options());
  const int world_size = world->size();
  const parallel::FaultPlan faults(options.faults);  // --fault: injected faults
  faults.check_world(world_size);
  // DDP registers the parameters that need a gradient when it wraps the model, and refuses a
  // step in which one of them gets none: the whitening bias, frozen after its epochs, would be.
  RG_CHECK(world_size == 1 || options.whiten_bias_epochs == 0,
           "train_cifar: whiten_bias_epochs (airbench94) is for one process; under mpirun set "
           "whiten_bias_epochs=0 (the bias then trains throughout)");
  const bool lead = world->rank() == 0;  // prints, logs and checkpoints
  TrainConfig cfg = options;
  if (!lead) cfg.progress = false;
  // The device by local rank × GPUs (DataParallel: its first device), before any GPU call, and
  // the group every collective goes through (train/common_options.h).
  const train::Placement placement = train::place(cfg, world);
  const Device device = placement.device;
  const std::vector<Device>& dp_devices = placement.dp_devices;
  const auto group = placement.group;
  set_deterministic_convolutions(cfg.deterministic);
  set_benchmark_convolutions(cfg.cudnn_benchmark);
  manual_seed(static_cast<uint64_t>(cfg.seed));
  // An --out holding an earlier run is resumed or overwritten only when asked (train/outputs.h).
  const std::string checkpoint = train::prepare_run_folder(
      cfg.folder("train_cifar"), cfg.eval_only ? train::RunKind::evaluate : train::RunKind::train,
      *group);
  // A resumed run keeps its global batch (processes x batch x accumulation steps) on any number
  // of processes: the batch or the accumulation is recomputed, or the start refused
  // (train/global_batch.h).
  const train::GlobalBatch asked{world_size, cfg.batch_size, cfg.accumulate_steps};
  const train::GlobalBatch batch =
      cfg.eval_only ? asked : train::resume_global_batch(checkpoint, asked, *group, "train_cifar");
  cfg.batch_size = batch.batch_size;
  cfg.accumulate_steps = batch.accumulate_steps;

  // ---- data: each process reads its share ---------------------------------------------------
  const std::string root = find_cifar10(cfg.data);
  const auto format = data::parse_data_format(cfg.data_format);
  auto train_set =
      data::take(data::open_cifar10(root, data::Split::train, format), cfg.train_limit);
  auto test_set = data::take(data::open_cifar10(root, data::Split::test, format), cfg.test_limit);
  // One process: the sampler is a plain shuffle (the same permutation as RandomSampler).
  auto train_sampler = std::make_shared<parallel::DistributedSampler>(
      train_set->size(), *group,
      parallel::DistributedSamplerOptions{.seed = static_cast<uint64_t>(cfg.seed)});
  auto test_sampler = std::make_shared<parallel::DistributedSampler>(
      test_set->size(), *group,
      parallel::DistributedSamplerOptions{.shuffle = parallel::Shuffle::off});
  // The host DataLoader, or the data set on the device (--data-on-device, cifar_data.h).
  const CifarLoaders loaders =
      make_cifar_loaders(cfg, device, train_set, test_set, train_sampler, test_sampler);
  data::BatchSource &train_loader = *loaders.train, &test_loader = *loaders.test;
  RG_CHECK(train_loader.num_batches() > 0, "train_cifar: ", train_sampler->size(),
           " training images per process make no full batch of ", cfg.batch_size);

  // ---- model, optimizer, schedule ---------------------------------------------------------
  const int64_t classes = train_set->num_classes();
  std::shared_ptr<nn::Module> model = nn::make_model(cfg.model, classes);
  if (auto* airbench = dynamic_cast<nn::Airbench*>(model.get()))
    airbench->init_whitening(sample_images(*train_set, 5000));
  auto* airbench94 = dynamic_cast<nn::Airbench94*>(model.get());
  if (airbench94) airbench94->init_whitening(sample_images(*train_set, 5000));
  // --init-from: given weights, read by every process (DDP broadcasts rank 0's again) — for a
  // new run; one that resumes continues from its checkpoint.
  if (!cfg.init_from.empty() && checkpoint.empty()) {
    const std::string note = train::init_from(*model, cfg.init_from, cfg.model);
    if (lead) std::cout << note << "\n";
  } else if (!cfg.init_from.empty() && lead) {
    std::cout << "init from '" << cfg.init_from << "' not needed: resuming from " << checkpoint
              << "\n";
  }
  // Under --dp, DataParallel converts its replicas instead (over its devices' threads).
  if (cfg.sync_bn && dp_devices.empty()) model = parallel::convert_sync_batchnorm(model, group);
  model->to(device);
  if (cfg.float64) model->to(DType::f64);  // weights and BatchNorm statistics: a checking mode
  // Mixed precision converts the model (O2/O3) and, under O2, keeps f32 master weights that
  // the optimizer updates: before the optimizer and DDP, which must see the final dtypes.
  MixedPrecision amp(*model, cfg.amp_options());
  RG_CHECK(!faults.has(parallel::FaultKind::overflow) || amp.scaler(),
           "train_cifar: --fault overflow needs a loss scaler to catch the inf (--amp O1 "
           "--amp-dtype fp16, or --loss-scale dynamic); without one it would reach the weights");
  if (world_size > 1 && amp.scaler()) parallel::sync_found_inf(*amp.scaler(), group);
  // The linear rule scales by the global batch over --batch-size: processes x accumulation.
  const double lr = scale_lr(cfg.lr, static_cast<int>(world_size * cfg.accumulate_steps),
                             cfg.lr_scaling == "linear" ? LrScaling::linear : LrScaling::none);
  const SGDOptions sgd{.lr = lr,
                       .momentum = cfg.momentum,
                       .weight_decay = cfg.weight_decay,
                       .nesterov = cfg.nesterov ? Nesterov::on : Nesterov::off};
  SGD optimizer(norm_bias_groups(*model, amp.optimizer_params(), sgd, cfg.norm_bias_lr_scale));
  // The schedule counts optimizer steps: with accumulation, fewer than batches.
  const int64_t steps_per_epoch =
      train::optimizer_steps(train_loader.num_batches(), cfg.accumulate_steps);
  auto scheduler = train::make_schedule({.name = cfg.schedule,
                                         .peak_lr = lr,  // the schedule peaks at the scaled rate
                                         .epochs = cfg.epochs,
                                         .warmup_epochs = cfg.warmup_epochs,
                                         .milestones = cfg.milestones},
                                        optimizer, steps_per_epoch);

  // airbench94's lookahead over the model's floating state (weights and BatchNorm statistics).
  const int64_t total_steps = cfg.epochs * steps_per_epoch;
  std::unique_ptr<Lookahead> lookahead;  // made after resume(), from the weights it restores

  // ---- resume and wrap: rank 0's state on every rank, then DP / DDP -------------------------
  std::map<std::string, std::string> recorded =  // what predict needs (train/model_card.h)
      train::model_card_metadata(cifar_model_card(cfg, *train_set, *test_set));
  TrainConfig as_run = options;  // the options with the split this run trains with, resumed
  as_run.batch_size = cfg.batch_size;
  as_run.accumulate_steps = cfg.accumulate_steps;
  recorded["config"] = as_run.to_json().dump();
  recorded.merge(train::global_batch_metadata(batch));  // what a resume on M ranks keeps
  const train::Task task =
      cifar_task(cfg, *test_sampler,
                 device.is_cuda() || loaders.placement == DataPlacement::device ? EvalCounts::device
                                                                                : EvalCounts::host);
  train::Trainer trainer(
      {group, device, model, amp, optimizer, *scheduler}, task,
      {.program = "train_cifar",
       .out = cfg.out,
       .epochs = cfg.epochs,
       .stop_after_epochs = cfg.stop_after_epochs,
       .clip_grad_norm = cfg.clip_grad_norm,
       .progress = cfg.progress,
       .resumed = !cfg.resume.empty(),
       .before_step =
           [&, rank = group->rank()](int64_t step) {
             faults.at_step(rank, step);
             // airbench94 trains its whitening bias for the first epochs only.
             if (cfg.whiten_bias_epochs > 0 && airbench94) {
               const int64_t epoch = (step - 1) / steps_per_epoch;
               airbench94->whiten_bias().set_requires_grad(epoch < cfg.whiten_bias_epochs);
             }
           },
       .after_step =
           [&](int64_t step) {
             if (lookahead) airbench94_lookahead(*lookahead, step, total_steps);
           },
       // --fault ...:at=backward and at=checkpoint (the hooks only where a fault needs them).
       .during_backward = faults.has(group->rank(), parallel::FaultPoint::backward)
                              ? std::function<void(int64_t, const Tensor&)>(
                                    [&, rank = group->rank()](int64_t step, const Tensor& param) {
                                      faults.in_backward(rank, step, param);
                                    })
                              : nullptr,
       .during_checkpoint_write =
           [&](int64_t first_step, int64_t last_step, const std::string& file) {
             if (file == "last.safetensors")  // the checkpoint; best.safetensors is written first
               faults.in_checkpoint_write(0, first_step, last_step, file);
           },
       .checkpoint_extra = recorded,
       .trace = cfg.trace_options(),
       .cuda_graphs = cfg.cuda_graphs,
       .accumulate_steps = cfg.accumulate_steps});
  trainer.resume(checkpoint,
                 cfg.eval_only ? train::Restore::weights_only : train::Restore::everything);
  // Its averages are not in checkpoints: a resumed run restarts them from the resumed weights.
  if (cfg.lookahead) lookahead = std::make_unique<Lookahead>(model_state(*model));
  trainer.wrap(train::wrap_options(
      cfg, placement, [name = cfg.model, classes] { return nn::make_model(name, classes); }));
  if (lead) {
    std::cout << "model " << cfg.model << " (" << model->parameter_count() << " parameters), "
              << train_set->describe() << ": " << train_set->size() << " train / "
              << test_set->size() << " test images, " << num_threads() << " threads, " << device
              << "\n"
              << loaders.description << "\n";
    if (device.is_cuda())  // the CPU has no plans to choose
      std::cout << "convolutions: "
                << (cfg.deterministic ? "cuDNN's deterministic plans (--deterministic)"
                    : cfg.cudnn_benchmark
                        ? "cuDNN's fastest plan, timed in the first step (cudnn_benchmark on; "
                          "--no-cudnn-benchmark for the heuristics' first)"
                        : "cuDNN's heuristics' first plan (cudnn_benchmark off; "
                          "--cudnn-benchmark times them)")
                << "\n";
    if (cfg.memory_format != "contiguous")
      std::cout << "activations " << cfg.memory_format
                << " (the input converted at the model's entry; --memory-format contiguous for "
                   "NCHW)\n";
    if (amp.level() != OptLevel::O0) {
      std::cout << "mixed precision " << cfg.amp << " in " << cfg.amp_dtype;
      if (amp.scaler())
        std::cout << ", loss scale " << cfg.loss_scale << " (from " << amp.scaler()->scale_value()
                  << ")\n";
      else
        std::cout << ", no loss scaler (--loss-scale " << cfg.loss_scale << ")\n";
    }
    if (world_size > 1)
      std::cout << world_size << " processes (" << group->backend() << ", " << cfg.allreduce
                << " allreduce" << (cfg.sync_bn ? ", SyncBatchNorm" : "")
                << (cfg.grad_compression != "none" ? ", " + cfg.grad_compression + " gradients"
                                                   : "")
                << "): batch " << cfg.batch_size << " per process = " << cfg.batch_size * world_size
                << ", peak lr " << lr << "\n";
    if (cfg.accumulate_steps > 1)
      std::cout << "gradient accumulation: " << cfg.accumulate_steps << " batches of "
                << cfg.batch_size << " per optimizer step: " << train::describe(batch)
                << " images a step, " << steps_per_epoch << " steps an epoch\n";
    if (world_size == 1 && cfg.grad_compression != "none")
      std::cout << "note: --grad-compression compresses DDP's buckets under mpirun; one "
                   "process sends none\n";
    if (!dp_devices.empty()) {
      std::cout << "DataParallel over";
      for (const Device& d : dp_devices) std::cout << " " << d;
      std::cout << (cfg.sync_bn ? " with SyncBatchNorm" : "") << ": batch " << cfg.batch_size
                << " split among them"
                << (train::shares_a_device(dp_devices)
                        ? " (replicas that share a device run side by side on it, each on its "
                          "own thread and stream: to learn and test DP, not faster)"
                        : "")
                << "\n";
    }
  }

  if (cfg.eval_only) {
    const train::EpochResult test = trainer.evaluate(test_loader);
    if (lead)
      std::cout << "test loss " << test.loss << "  accuracy " << 100 * test.values[0] << "% ("
                << test.samples << " images)\n";
    return 0;
  }

  // ---- warm-up: the convolutions' plans chosen before the clock (train/warm_up.h) ----------
  // DataParallel splits each batch over its replicas' devices: not warmed up (yet).
  if (cfg.warm_up && dp_devices.empty()) {
    const int64_t batches = train_loader.num_batches();
    const double seconds = train::warm_up(
        {.make_model = [&] { return nn::make_model(cfg.model, classes); },
         .amp = cfg.amp_options(),
         .batch_size = cfg.batch_size,
         .last_batch_size = train_loader.num_samples() - (batches - 1) * cfg.batch_size},
        task, test_loader, device, *group);
    if (lead)
      std::cout << "warm-up: " << train::format_fixed(seconds, 2)
                << " s on a throwaway model before the timed run (--no-warm-up: none)\n";
  }

  // ---- the loop ---------------------------------------------------------------------------
  const auto started = std::chrono::steady_clock::now();
  const TrainingState& state = trainer.fit(train_loader, test_loader);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (lead && amp.scaler())
    std::cout << "loss scale " << amp.scaler()->scale_value() << " at the end, "
              << amp.scaler()->skipped_steps() << " steps skipped on gradient overflow\n";
  if (lead)
    std::cout << "done: best test accuracy " << std::fixed << std::setprecision(2)
              << 100 * state.best_accuracy << "%, " << state.epoch << " epochs, total time "
              << train::format_duration(seconds) << ", peak memory "
              << trainer.peak_memory_bytes() / (1 << 20) << " MiB"
              << (world_size > 1 ? " (rank 0)" : "") << "\n"
              << trainer.describe_optimizer_state() << "\n"
              << "outputs in " << cfg.out
              << " (last.safetensors, best.safetensors, metrics.csv, TensorBoard events)\n";
  return 0;
}

}  // namespace rg::apps
