#pragma once
// Where train_cifar's batches are made (--data-on-device):
//   host   — the DataLoader: worker threads decode (or read the cache), augment and stack each
//            batch on the host; on a GPU it is pinned and copied with each step;
//   device — the DeviceLoader (data/device_loader.h): the decoded sets are copied to the training
//            device once, and each batch is an index gather with the augmentation and the
//            normalisation in one kernel. The same batches, bit for bit.
// auto takes the device for cuda devices and the host on the CPU (whose path stays as it was).
// Refused: with --dp (DataParallel splits host batches over its devices); under DDP every rank
// holds the whole set (its DistributedSampler draws its samples from all of it). A set that does
// not fit (the upload runs out of memory) is an error under `on`, and under auto goes back to
// the host DataLoader, saying so.

#include <memory>
#include <string>

#include "apps/train_cifar/config.h"
#include "core/device.h"
#include "data/batch_source.h"
#include "data/dataset.h"
#include "data/sampler.h"

namespace rg::apps {

enum class DataPlacement { host, device };

// Where `cfg.data_on_device` puts the data for a run on `device` (before any upload); throws
// rg::Error for `on` with --dp.
DataPlacement choose_data_placement(const TrainConfig& cfg, const Device& device);

struct CifarLoaders {
  std::unique_ptr<data::BatchSource> train, test;
  DataPlacement placement = DataPlacement::host;
  std::string description;  // one line for the run's header: where batches are made
};

// The training loader (cfg's augmentation, batch size, seed; the last partial batch dropped)
// and the test loader (batch 256), from the samplers the app made.
CifarLoaders make_cifar_loaders(const TrainConfig& cfg, const Device& device,
                                const std::shared_ptr<data::Dataset>& train_set,
                                const std::shared_ptr<data::Dataset>& test_set,
                                const std::shared_ptr<data::Sampler>& train_sampler,
                                const std::shared_ptr<data::Sampler>& test_sampler);

}  // namespace rg::apps
