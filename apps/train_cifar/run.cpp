// train_cifar's run(): options, data, model, optimizer and schedule, resume, then the epoch
// loop — the shape of the Horovod CIFAR tutorial. The pieces live in loop.h and the library.
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "apps/train_cifar/loop.h"
#include "apps/train_cifar/run.h"
#include "core/allocator.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "data/cifar10.h"
#include "nn/models/airbench.h"
#include "nn/models/resnet.h"

namespace rg::apps {
namespace fs = std::filesystem;

int run(const TrainConfig& cfg) {
  // ---- machine ----------------------------------------------------------------------------
  if (cfg.threads > 0) set_num_threads(static_cast<int>(cfg.threads));
  const Device device = Device::parse(cfg.device);
  check_device_available(device);
  manual_seed(static_cast<uint64_t>(cfg.seed));
  fs::create_directories(cfg.out);

  // ---- data -------------------------------------------------------------------------------
  const std::string root = find_cifar10(cfg.data);
  const auto format = data::parse_data_format(cfg.data_format);
  auto train_set =
      data::take(data::open_cifar10(root, data::Split::train, format), cfg.train_limit);
  auto test_set = data::take(data::open_cifar10(root, data::Split::test, format), cfg.test_limit);
  const int workers = static_cast<int>(cfg.workers);
  data::DataLoader train_loader(train_set,
                                std::make_shared<data::RandomSampler>(train_set->size(), cfg.seed),
                                data::cifar10_train_transform(),
                                {.batch_size = cfg.batch_size,
                                 .last_batch = data::LastBatch::drop,
                                 .num_workers = workers,
                                 .seed = static_cast<uint64_t>(cfg.seed)});
  data::DataLoader test_loader(
      test_set, std::make_shared<data::SequentialSampler>(test_set->size()),
      data::cifar10_test_transform(), {.batch_size = 256, .num_workers = workers});
  RG_CHECK(train_loader.num_batches() > 0, "train_cifar: ", train_set->size(),
           " training images make no full batch of ", cfg.batch_size);

  // ---- model, optimizer, schedule ---------------------------------------------------------
  auto model = nn::make_model(cfg.model, train_set->num_classes());
  if (auto* airbench = dynamic_cast<nn::Airbench*>(model.get()))
    airbench->init_whitening(sample_images(*train_set, 5000));
  model->to(device);
  SGD optimizer(model->parameters(), {.lr = cfg.lr,
                                      .momentum = cfg.momentum,
                                      .weight_decay = cfg.weight_decay,
                                      .nesterov = cfg.nesterov ? Nesterov::on : Nesterov::off});
  auto scheduler = make_schedule(cfg, optimizer, train_loader.num_batches());

  // ---- resume -----------------------------------------------------------------------------
  TrainingState state;
  if (const std::string from = resume_path(cfg); !from.empty()) {
    state = load_checkpoint(from, *model, cfg.eval_only ? nullptr : &optimizer,
                            cfg.eval_only ? nullptr : scheduler.get());
    std::cout << "resumed from " << from << " after epoch " << state.epoch << "\n";
  }
  std::cout << "model " << cfg.model << " (" << model->parameter_count() << " parameters), "
            << train_set->describe() << ": " << train_set->size() << " train / " << test_set->size()
            << " test images, " << num_threads() << " threads, " << device << "\n";

  if (cfg.eval_only) {
    const EpochResult test = evaluate(*model, test_loader, device, cfg);
    std::cout << "test loss " << test.loss << "  accuracy " << 100 * test.accuracy << "%\n";
    return 0;
  }

  // ---- the epoch loop ---------------------------------------------------------------------
  CsvLog csv(cfg.out + "/metrics.csv");
  TensorBoardWriter tensorboard(cfg.out);
  const auto started = std::chrono::steady_clock::now();
  int64_t epochs_this_run = 0;
  for (int64_t epoch = state.epoch; epoch < cfg.epochs; ++epoch) {
    train_loader.start_epoch(epoch);
    const double lr = optimizer.lr(0);
    const EpochResult train =
        train_epoch(*model, train_loader, optimizer, *scheduler, cfg, device, epoch, state.step);
    const EpochResult test = evaluate(*model, test_loader, device, cfg);
    state.epoch = epoch + 1;
    const bool best = test.accuracy > state.best_accuracy;
    if (best) state.best_accuracy = test.accuracy;
    state.extra["config"] = cfg.to_json().dump();

    log_epoch(csv, tensorboard, epoch, cfg.epochs, lr, train, test, state.best_accuracy);
    save_checkpoint(cfg.out + "/last.safetensors", *model, &optimizer, scheduler.get(), state);
    if (best) save_checkpoint(cfg.out + "/best.safetensors", *model, nullptr, nullptr, state);
    if (cfg.stop_after_epochs > 0 && ++epochs_this_run >= cfg.stop_after_epochs) break;
  }

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "done: best test accuracy " << std::fixed << std::setprecision(2)
            << 100 * state.best_accuracy << "%, " << state.epoch << " epochs, total time "
            << format_duration(seconds) << ", peak memory "
            << memory_stats(device).peak_bytes / (1 << 20) << " MiB\n"
            << "outputs in " << cfg.out << " (last.safetensors, best.safetensors, metrics.csv, "
            << "TensorBoard events)\n";
  return 0;
}

}  // namespace rg::apps
