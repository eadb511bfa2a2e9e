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
#include "train/common_options.h"
#include "train/global_batch.h"
#include "train/outputs.h"
#include "train/schedule.h"
#include "train/trainer.h"
#include "train/world.h"

namespace rg::apps {

int run_unet(const UnetConfig& cfg_in) {
  train_unet_options().validate(cfg_in);  // options set in code, too (tests)
  // ---- init: the world, this process's device ------------------------------------------------
  auto world = train::join_world(cfg_in.world_options());
  const int world_size = world->size();
  const bool lead = world->rank() == 0;  // prints, logs and checkpoints
  UnetConfig cfg = cfg_in;
  if (!lead) cfg.progress = false;
  // The device by local rank × GPUs, DataParallel's devices and the group of the collectives
  // (train/common_options.h), as train_cifar's.
  const train::Placement placement = train::place(cfg, world);
  const Device device = placement.device;
  const auto group = placement.group;
  manual_seed(static_cast<uint64_t>(cfg.seed));
  const std::string checkpoint =
      train::prepare_run_folder(cfg.folder("train_unet"), train::RunKind::train, *group);
  // The global batch kept on any number of processes (train/global_batch.h), as train_cifar's.
  const train::GlobalBatch batch = train::resume_global_batch(
      checkpoint, {world_size, cfg.batch_size, cfg.accumulate_steps}, *group, "train_unet");
  cfg.batch_size = batch.batch_size;
  cfg.accumulate_steps = batch.accumulate_steps;

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
  // Under --dp, DataParallel converts its replicas instead (over its devices' threads).
  if (cfg.sync_bn && placement.dp_devices.empty())
    model = parallel::convert_sync_batchnorm(model, group);
  model->to(device);
  MixedPrecision amp(*model, cfg.amp_options());  // before the optimizer and DDP (train_cifar)
  if (world_size > 1 && amp.scaler()) parallel::sync_found_inf(*amp.scaler(), group);
  AdamW optimizer(amp.optimizer_params(), {.lr = cfg.lr, .weight_decay = cfg.weight_decay});
  auto scheduler =
      train::make_schedule(  // per optimizer step: fewer than batches with accumulation
          {.name = cfg.schedule, .peak_lr = cfg.lr, .epochs = cfg.epochs}, optimizer,
          train::optimizer_steps(train_loader.num_batches(), cfg.accumulate_steps));

  // ---- resume and wrap: rank 0's state on every rank, then DP / DDP -------------------------
  std::map<std::string, std::string> recorded =
      train::model_card_metadata(unet_model_card(cfg, sets.class_names));  // what predict needs
  // The one-line description, as before: predict's hint for a checkpoint without a card
  // recognises train_unet's by it (train/model_card.cpp).
  recorded["config"] = cfg.describe();
  recorded.merge(train::global_batch_metadata(batch));  // what a resume on M ranks keeps
  train::Trainer trainer({group, device, model, amp, optimizer, *scheduler},
                         unet_task(cfg, *test_sampler, std::move(preview), sets.class_names),
                         {.program = "train_unet",
                          .out = cfg.out,
                          .epochs = cfg.epochs,
                          .stop_after_epochs = cfg.stop_after_epochs,
                          .progress = cfg.progress,
                          .resumed = !cfg.resume.empty(),
                          .checkpoint_extra = recorded,
                          .trace = cfg.trace_options(),
                          .accumulate_steps = cfg.accumulate_steps});
  trainer.resume(checkpoint, train::Restore::everything);
  trainer.wrap(train::wrap_options(
      cfg, placement, [unet = cfg.unet()] { return std::make_shared<nn::UNet>(unet); }));
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
