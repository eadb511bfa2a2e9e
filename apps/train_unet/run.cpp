// train_unet: a UNet segments generated shapes (data/shapes.h) or the user's images and masks
// or volumes (data/segmentation_files.h), on the training loop it shares with train_cifar
// (train/). Read it top to bottom: init, data, model, wrap, loop. Under scripts/mpirun.sh N it
// is DDP over N processes, each on its share of the data.
#include "apps/train_unet/run.h"

#include <iostream>

#include "apps/train_unet/unet_data.h"
#include "apps/train_unet/unet_task.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "optim/adamw.h"
#include "parallel/found_inf.h"
#include "parallel/sync_batch_norm.h"
#include "train/outputs.h"
#include "train/schedule.h"
#include "train/trainer.h"
#include "train/world.h"

namespace rg::apps {

int run_unet(const UnetConfig& cfg_in) {
  check_config(cfg_in);
  // ---- init: the world, this process's device ------------------------------------------------
  auto group = train::join_world({.allreduce = cfg_in.allreduce == "native"
                                                   ? parallel::AllreduceAlgorithm::native
                                                   : parallel::AllreduceAlgorithm::ring,
                                  .threads = cfg_in.threads});
  const int world_size = group->size();
  const bool lead = group->rank() == 0;  // prints, logs and checkpoints
  UnetConfig cfg = cfg_in;
  if (!lead) cfg.progress = false;
  const Device device =
      train::training_device(cfg.device, group->local_rank(), group->local_size());
  check_device_available(device);
  manual_seed(static_cast<uint64_t>(cfg.seed));
  const std::string checkpoint = train::prepare_run_folder(
      {.program = "train_unet", .out = cfg.out, .resume = cfg.resume, .overwrite = cfg.overwrite},
      train::RunKind::train, *group);

  // ---- data: generated or the user's files, each process reads its share ------------------
  const auto seed = static_cast<uint64_t>(cfg.seed);
  UnetData sets = unet_data(cfg);  // files: sets cfg's classes and channels from them
  const data::PinMemory pin = device.is_cuda() ? data::PinMemory::yes : data::PinMemory::no;
  auto train_sampler = std::make_shared<parallel::DistributedSampler>(
      sets.train->size(), *group, parallel::DistributedSamplerOptions{.seed = seed});
  auto test_sampler = std::make_shared<parallel::DistributedSampler>(
      sets.test->size(), *group,
      parallel::DistributedSamplerOptions{.shuffle = parallel::Shuffle::off});
  const int workers = static_cast<int>(cfg.workers);
  data::DataLoader train_loader(sets.train, train_sampler, sets.augment,
                                {.batch_size = cfg.batch_size,
                                 .last_batch = data::LastBatch::drop,
                                 .num_workers = workers,
                                 .seed = seed,
                                 .pin_memory = pin});
  // Files: whole images of any size, one per batch, segmented by sliding windows.
  data::DataLoader test_loader(sets.test, test_sampler, sets.preprocess,
                               {.batch_size = sets.whole_images ? 1 : cfg.batch_size,
                                .num_workers = workers,
                                .pin_memory = pin});
  RG_CHECK(train_loader.num_batches() > 0, "train_unet: ", train_sampler->size(),
           " training samples per process make no full batch of ", cfg.batch_size);
  data::SampleRng preview_rng(0, 0, 0);
  data::SegmentationExample preview = sets.preprocess->apply(sets.test->get(0), preview_rng);

  // ---- model, optimizer, schedule ---------------------------------------------------------
  std::shared_ptr<nn::Module> model = std::make_shared<nn::UNet>(cfg.unet());
  if (cfg.sync_bn && cfg.dp == 0) model = parallel::convert_sync_batchnorm(model, group);
  model->to(device);
  MixedPrecision amp(*model, cfg.amp_options());  // before the optimizer and DDP (train_cifar)
  if (world_size > 1 && amp.scaler()) parallel::sync_found_inf(*amp.scaler(), group);
  AdamW optimizer(amp.optimizer_params(), {.lr = cfg.lr, .weight_decay = cfg.weight_decay});
  auto scheduler =
      train::make_schedule({.name = cfg.schedule, .peak_lr = cfg.lr, .epochs = cfg.epochs},
                           optimizer, train_loader.num_batches());

  // ---- resume and wrap: rank 0's state on every rank, then DP / DDP -------------------------
  std::map<std::string, std::string> recorded =
      train::model_card_metadata(unet_model_card(cfg, sets.class_names));  // what predict needs
  recorded["config"] = cfg.describe();
  train::Trainer trainer({group, device, model, amp, optimizer, *scheduler},
                         unet_task(cfg, *test_sampler, std::move(preview), sets.class_names),
                         {.program = "train_unet",
                          .out = cfg.out,
                          .epochs = cfg.epochs,
                          .stop_after_epochs = cfg.stop_after_epochs,
                          .progress = cfg.progress,
                          .resumed = !cfg.resume.empty(),
                          .checkpoint_extra = recorded,
                          .trace = [&] {
                            train::TraceOptions t{.path = cfg.trace};
                            train::parse_trace_steps(cfg.trace_steps, t);
                            return t;
                          }()});
  trainer.resume(checkpoint, train::Restore::everything);
  trainer.wrap({.dp = static_cast<int>(cfg.dp),
                .replica_factory = [unet = cfg.unet()] { return std::make_shared<nn::UNet>(unet); },
                .batch_norm = cfg.sync_bn ? parallel::BatchNormSync::across_devices
                                          : parallel::BatchNormSync::per_device,
                .bucket_mb = cfg.bucket_mb,
                .zero = cfg.zero == 1 ? train::ZeroStage::one : train::ZeroStage::off});
  if (lead) {
    std::cout << "train_unet: " << cfg.describe() << "\n"
              << sets.describe << "\nUNet " << cfg.model_classes() << " output(s), "
              << model->parameter_count() << " parameters, " << num_threads() << " threads, "
              << device;
    if (world_size > 1)
      std::cout << ", " << world_size << " processes (" << group->backend()
                << (cfg.sync_bn ? ", SyncBatchNorm" : "") << ")";
    std::cout << "\n";
  }

  // ---- loop ----------------------------------------------------------------------------------
  const TrainingState& state = trainer.fit(train_loader, test_loader);
  if (lead)
    std::cout << "best dice " << state.best_accuracy << ", logs and checkpoints in " << cfg.out
              << "\n"
              << trainer.describe_optimizer_state() << "\n";
  return 0;
}

}  // namespace rg::apps
