#include "apps/train_cifar/cifar_data.h"

#include <iostream>

#include "core/allocator.h"
#include "data/dataloader.h"
#include "data/device_loader.h"
#include "data/transforms.h"

namespace rg::apps {

DataPlacement choose_data_placement(const TrainConfig& cfg, const Device& device) {
  if (cfg.data_on_device == "off") return DataPlacement::host;
  if (cfg.data_on_device == "on") {
    RG_CHECK(cfg.dp == 0, "train_cifar: --data-on-device on does not combine with --dp ", cfg.dp,
             " (DataParallel splits host batches over its devices); use --data-on-device off or "
             "auto");
    return DataPlacement::device;
  }
  return device.is_cuda() && cfg.dp == 0 ? DataPlacement::device : DataPlacement::host;
}

namespace {
CifarLoaders host_loaders(const TrainConfig& cfg, const Device& device,
                          const std::shared_ptr<data::Dataset>& train_set,
                          const std::shared_ptr<data::Dataset>& test_set,
                          const std::shared_ptr<data::Sampler>& train_sampler,
                          const std::shared_ptr<data::Sampler>& test_sampler) {
  const int workers = static_cast<int>(cfg.workers);
  // Batches for a GPU in pinned memory: their copies to the device run asynchronously.
  const data::PinMemory pin = device.is_cuda() ? data::PinMemory::yes : data::PinMemory::no;
  CifarLoaders l;
  l.train = std::make_unique<data::DataLoader>(
      train_set, train_sampler,
      cfg.augmentation == "airbench94" ? data::cifar10_airbench94_transform()
                                       : data::cifar10_train_transform(),
      data::DataLoaderOptions{.batch_size = cfg.batch_size,
                              .last_batch = data::LastBatch::drop,
                              .num_workers = workers,
                              .seed = static_cast<uint64_t>(cfg.seed),
                              .pin_memory = pin});
  l.test = std::make_unique<data::DataLoader>(
      test_set, test_sampler, data::cifar10_test_transform(),
      data::DataLoaderOptions{.batch_size = 256, .num_workers = workers, .pin_memory = pin});
  l.placement = DataPlacement::host;
  l.description = "batches made on the host (" + std::to_string(workers) + " loader threads)";
  return l;
}
}  // namespace

CifarLoaders make_cifar_loaders(const TrainConfig& cfg, const Device& device,
                                const std::shared_ptr<data::Dataset>& train_set,
                                const std::shared_ptr<data::Dataset>& test_set,
                                const std::shared_ptr<data::Sampler>& train_sampler,
                                const std::shared_ptr<data::Sampler>& test_sampler) {
  if (choose_data_placement(cfg, device) == DataPlacement::host)
    return host_loaders(cfg, device, train_set, test_set, train_sampler, test_sampler);
  std::shared_ptr<data::DeviceDataset> train_data, test_data;
  try {
    train_data = std::make_shared<data::DeviceDataset>(*train_set, device);
    test_data = std::make_shared<data::DeviceDataset>(*test_set, device);
  } catch (const Error& e) {
    if (cfg.data_on_device == "on")
      fail("train_cifar: --data-on-device on: ", e.what(), " (use --data-on-device off)");
    train_data.reset();  // its memory back before the host path starts
    std::cerr << "train_cifar: the data set stays on the host (" << e.what() << ")\n";
    return host_loaders(cfg, device, train_set, test_set, train_sampler, test_sampler);
  }
  CifarLoaders l;
  l.train = std::make_unique<data::DeviceLoader>(
      train_data, train_sampler,
      cfg.augmentation == "airbench94" ? data::cifar10_airbench94_device_augment()
                                       : data::cifar10_train_device_augment(),
      // Gathered in the model's layout: the step's conversion at the model's entry is then a
      // no-op. (The test batches stay NCHW: the test-time views read NCHW.)
      data::DeviceLoaderOptions{.batch_size = cfg.batch_size,
                                .last_batch = data::LastBatch::drop,
                                .seed = static_cast<uint64_t>(cfg.seed),
                                .memory_format = parse_memory_format(cfg.memory_format)});
  l.test = std::make_unique<data::DeviceLoader>(test_data, test_sampler,
                                                data::cifar10_test_device_augment(),
                                                data::DeviceLoaderOptions{.batch_size = 256});
  l.placement = DataPlacement::device;
  l.description = "data set on " + device.str() + " (" +
                  format_bytes(train_data->bytes() + test_data->bytes()) + "), batches made there";
  return l;
}

}  // namespace rg::apps
