// train_cifar's run(): options, data, model, optimizer and schedule, resume, then the epoch
// loop — the shape of the Horovod CIFAR tutorial. The pieces live in loop.h and the library.
//
// The same code runs alone (a world of one process) and under mpirun (scripts/mpirun.sh N):
// each process trains on its share of every epoch (DistributedSampler), DDP averages the
// gradients, rank 0 alone prints, logs and writes checkpoints, and every reported metric is
// over all processes.
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <thread>

#include "apps/train_cifar/loop.h"
#include "apps/train_cifar/outputs.h"
#include "apps/train_cifar/run.h"
#include "core/allocator.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "data/cifar10.h"
#include "nn/models/airbench.h"
#include "nn/models/resnet.h"
#include "parallel/checkpoint.h"
#include "parallel/data_parallel.h"
#include "parallel/ddp.h"
#include "parallel/found_inf.h"
#include "parallel/horovod.h"
#include "parallel/sync_batch_norm.h"

namespace rg::apps {
namespace fs = std::filesystem;

namespace {

// Joins the world (MPI under mpirun, else one process) with the chosen allreduce, and shares
// the cores among the processes of this machine unless --threads says otherwise.
std::shared_ptr<parallel::ProcessGroup> join_world(const TrainConfig& cfg) {
  parallel::ProcessGroupOptions options;
  options.algorithm = cfg.allreduce == "native" ? parallel::AllreduceAlgorithm::native
                                                : parallel::AllreduceAlgorithm::ring;
  // collective_timeout <= kMaxCollectiveTimeout: the milliseconds fit easily.
  options.timeout = std::chrono::milliseconds(std::llround(cfg.collective_timeout * 1000));
  options.check_sequence = cfg.check_sequence;
  auto group = parallel::init(options);
  if (cfg.threads > 0) {
    set_num_threads(static_cast<int>(cfg.threads));
  } else if (group->local_size() > 1) {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    set_num_threads(std::max(1, cores / group->local_size()));
  }
  return group;
}

// --dp N: DataParallel over N devices of the --device kind (cpu:0..N-1 or cuda:0..N-1), the
// model's replicas built by the same factory as the model itself.
std::shared_ptr<parallel::DataParallel> wrap_data_parallel(std::shared_ptr<nn::Module> model,
                                                           const TrainConfig& cfg,
                                                           const Device& device, int64_t classes,
                                                           int world_size) {
  RG_CHECK(world_size == 1, "train_cifar: --dp runs in one process; under mpirun (", world_size,
           " processes) use DDP alone");
  RG_CHECK(device.index == 0, "train_cifar: --dp ", cfg.dp, " starts at device 0, not ", device);
  std::vector<Device> devices;
  for (int i = 0; i < cfg.dp; ++i) devices.push_back({device.type, i});
  return std::make_shared<parallel::DataParallel>(
      model, [name = cfg.model, classes] { return nn::make_model(name, classes); }, devices,
      parallel::DataParallelOptions{.batch_norm = cfg.sync_bn
                                                      ? parallel::BatchNormSync::across_devices
                                                      : parallel::BatchNormSync::per_device});
}

}  // namespace

Device training_device(const std::string& device_flag, int local_rank, int local_size) {
  const Device device = Device::parse(device_flag);
  if (device_flag != "cuda" || local_size <= 1) return device;
  return Device::cuda(local_rank);
}

int run(const TrainConfig& options) {
  // ---- machine ----------------------------------------------------------------------------
  auto group = join_world(options);
  const int rank = group->rank(), world_size = group->size();
  options.faults.check_world(world_size);
  const bool lead = rank == 0;  // prints, logs and checkpoints
  TrainConfig cfg = options;
  if (!lead) cfg.progress = false;
  const Device device = training_device(cfg.device, group->local_rank(), group->local_size());
  check_device_available(device);
  set_deterministic_convolutions(cfg.deterministic);
  manual_seed(static_cast<uint64_t>(cfg.seed));
  // Before the data loads, so that a refusal comes at once: an --out holding an earlier run is
  // resumed or overwritten only when asked (outputs.h). Rank 0 decides and every rank learns
  // the verdict, so that a refusal ends all of them alike instead of leaving the others
  // waiting in a collective.
  std::string checkpoint, refusal;
  if (lead) {
    try {
      if (cfg.eval_only)
        fs::create_directories(cfg.out);
      else
        prepare_output_folder(cfg);
      checkpoint = resume_path(cfg);
      RG_CHECK(!cfg.eval_only || !checkpoint.empty(),
               "train_cifar: --eval-only found no checkpoint to evaluate (--resume ", cfg.resume,
               ": no ", cfg.out, "/last.safetensors)");
    } catch (const std::exception& e) {
      refusal = e.what();
    }
  }
  if (world_size > 1) refusal = parallel::broadcast_object(refusal, 0, *group);
  if (!refusal.empty()) fail(refusal, lead ? "" : " (found by rank 0)");

  // ---- data: each process reads its share ---------------------------------------------------
  const std::string root = find_cifar10(cfg.data);
  const auto format = data::parse_data_format(cfg.data_format);
  auto train_set =
      data::take(data::open_cifar10(root, data::Split::train, format), cfg.train_limit);
  auto test_set = data::take(data::open_cifar10(root, data::Split::test, format), cfg.test_limit);
  const int workers = static_cast<int>(cfg.workers);
  // Batches for a GPU in pinned memory: their copies to the device run asynchronously.
  const data::PinMemory pin = device.is_cuda() ? data::PinMemory::yes : data::PinMemory::no;
  // One process: the sampler is a plain shuffle (the same permutation as RandomSampler).
  auto train_sampler = std::make_shared<parallel::DistributedSampler>(
      train_set->size(), *group,
      parallel::DistributedSamplerOptions{.seed = static_cast<uint64_t>(cfg.seed)});
  auto test_sampler = std::make_shared<parallel::DistributedSampler>(
      test_set->size(), *group,
      parallel::DistributedSamplerOptions{.shuffle = parallel::Shuffle::off});
  data::DataLoader train_loader(train_set, train_sampler, data::cifar10_train_transform(),
                                {.batch_size = cfg.batch_size,
                                 .last_batch = data::LastBatch::drop,
                                 .num_workers = workers,
                                 .seed = static_cast<uint64_t>(cfg.seed),
                                 .pin_memory = pin});
  data::DataLoader test_loader(test_set, test_sampler, data::cifar10_test_transform(),
                               {.batch_size = 256, .num_workers = workers, .pin_memory = pin});
  RG_CHECK(train_loader.num_batches() > 0, "train_cifar: ", train_sampler->size(),
           " training images per process make no full batch of ", cfg.batch_size);

  // ---- model, optimizer, schedule ---------------------------------------------------------
  std::shared_ptr<nn::Module> model = nn::make_model(cfg.model, train_set->num_classes());
  if (auto* airbench = dynamic_cast<nn::Airbench*>(model.get()))
    airbench->init_whitening(sample_images(*train_set, 5000));
  // Under --dp, DataParallel converts its replicas instead (over its devices' threads).
  if (cfg.sync_bn && cfg.dp == 0) model = parallel::convert_sync_batchnorm(model, group);
  model->to(device);
  // Mixed precision converts the model (O2/O3) and, under O2, keeps f32 master weights that
  // the optimizer updates: before the optimizer and DDP, which must see the final dtypes.
  MixedPrecision amp(*model, cfg.amp_options());
  if (world_size > 1 && amp.scaler()) parallel::sync_found_inf(*amp.scaler(), group);
  const double lr = scale_lr(cfg.lr, world_size,
                             cfg.lr_scaling == "linear" ? LrScaling::linear : LrScaling::none);
  cfg.lr = lr;  // the schedule peaks at the scaled rate
  SGD optimizer(amp.optimizer_params(), {.lr = lr,
                                         .momentum = cfg.momentum,
                                         .weight_decay = cfg.weight_decay,
                                         .nesterov = cfg.nesterov ? Nesterov::on : Nesterov::off});
  auto scheduler = make_schedule(cfg, optimizer, train_loader.num_batches());

  // ---- resume: rank 0 reads the checkpoint, every rank gets its state ---------------------
  TrainingState state;
  if (auto resumed = parallel::load_checkpoint_on_root(
          checkpoint, *model, cfg.eval_only ? nullptr : &optimizer,
          cfg.eval_only ? nullptr : scheduler.get(), cfg.eval_only ? nullptr : &amp, 0, *group)) {
    state = resumed->state;
    if (lead)
      std::cout << "resumed from " << resumed->path << " after epoch " << state.epoch << "\n";
  }
  // Gradients averaged across processes during backward. Its construction broadcasts rank
  // 0's weights again, which costs one message and guards against any rank-local drift.
  std::shared_ptr<nn::Module> trained = model;
  std::shared_ptr<parallel::DataParallel> data_parallel;
  if (cfg.dp > 0)
    trained = data_parallel =
        wrap_data_parallel(model, cfg, device, train_set->num_classes(), world_size);
  if (world_size > 1)  // bucket_mb <= kMaxBucketMb: the product fits int64
    trained = std::make_shared<parallel::DistributedDataParallel>(
        model, group,
        parallel::DDPOptions{.bucket_cap_bytes = static_cast<int64_t>(cfg.bucket_mb * (1 << 20))});
  if (lead) {
    std::cout << "model " << cfg.model << " (" << model->parameter_count() << " parameters), "
              << train_set->describe() << ": " << train_set->size() << " train / "
              << test_set->size() << " test images, " << num_threads() << " threads, " << device
              << "\n";
    if (amp.level() != OptLevel::O0)
      std::cout << "mixed precision " << cfg.amp << " in " << cfg.amp_dtype << ", loss scale "
                << cfg.loss_scale << " (from " << amp.scaler()->scale_value() << ")\n";
    if (world_size > 1)
      std::cout << world_size << " processes (" << group->backend() << ", " << cfg.allreduce
                << " allreduce" << (cfg.sync_bn ? ", SyncBatchNorm" : "") << "): batch "
                << cfg.batch_size << " per process = " << cfg.batch_size * world_size
                << ", peak lr " << lr << "\n";
    if (data_parallel)
      std::cout << "DataParallel over " << cfg.dp << " devices"
                << (cfg.sync_bn ? " with SyncBatchNorm" : "") << ": batch " << cfg.batch_size
                << " split among them\n";
  }

  if (cfg.eval_only) {
    const EpochResult test = evaluate(*model, test_loader, *test_sampler, amp, device, cfg, *group);
    if (lead)
      std::cout << "test loss " << test.loss << "  accuracy " << 100 * test.accuracy << "% ("
                << test.samples << " images)\n";
    return 0;
  }

  // ---- the epoch loop ---------------------------------------------------------------------
  std::optional<CsvLog> csv;
  std::optional<TensorBoardWriter> tensorboard;
  if (lead) {
    // Epochs after the checkpoint's are run again: their rows and events from before the
    // interruption go, so that the logs read as one uninterrupted run.
    if (!cfg.resume.empty()) truncate_logs(cfg.out, state.epoch);
    csv.emplace(cfg.out + "/metrics.csv");
    tensorboard.emplace(cfg.out);
  }
  const auto started = std::chrono::steady_clock::now();
  int64_t epochs_this_run = 0;
  for (int64_t epoch = state.epoch; epoch < cfg.epochs; ++epoch) {
    train_loader.start_epoch(epoch);
    if (data_parallel) {
      data_parallel->reset_times();
      for (const Device& d : data_parallel->devices()) reset_peak_memory(d);
    }
    const double epoch_lr = optimizer.lr(0);
    const EpochResult train = train_epoch(*trained, train_loader, optimizer, *scheduler, amp, cfg,
                                          device, epoch, state.step, *group);
    const EpochResult test = evaluate(*model, test_loader, *test_sampler, amp, device, cfg, *group);
    state.epoch = epoch + 1;
    const bool best = test.accuracy > state.best_accuracy;
    if (best) state.best_accuracy = test.accuracy;
    state.extra["config"] = options.to_json().dump();  // as given, before lr scaling

    if (lead) {
      log_epoch(*csv, *tensorboard, epoch, cfg.epochs, epoch_lr, train, test, state.best_accuracy);
      if (data_parallel) std::cout << data_parallel->report();
      save_checkpoint(cfg.out + "/last.safetensors", *model, &optimizer, scheduler.get(), state,
                      &amp);
      // With amp: under O2 the f32 masters are the weights worth keeping.
      if (best)
        save_checkpoint(cfg.out + "/best.safetensors", *model, nullptr, nullptr, state, &amp);
    }
    if (cfg.stop_after_epochs > 0 && ++epochs_this_run >= cfg.stop_after_epochs) break;
  }

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (lead && amp.scaler())
    std::cout << "loss scale " << amp.scaler()->scale_value() << " at the end, "
              << amp.scaler()->skipped_steps() << " steps skipped on gradient overflow\n";
  if (lead)
    std::cout << "done: best test accuracy " << std::fixed << std::setprecision(2)
              << 100 * state.best_accuracy << "%, " << state.epoch << " epochs, total time "
              << format_duration(seconds) << ", peak memory "
              << memory_stats(device).peak_bytes / (1 << 20) << " MiB"
              << (world_size > 1 ? " (rank 0)" : "") << "\n"
              << "outputs in " << cfg.out
              << " (last.safetensors, best.safetensors, metrics.csv, TensorBoard events)\n";
  return 0;
}

}  // namespace rg::apps
