#pragma once
// The device data path: the decoded data set lives on the training device for the whole run, and
// batches are made there — index gathers of the epoch's order, with the augmentation and the
// normalisation in the same kernel (airbench94's CifarLoader keeps CIFAR-10 on the GPU the same
// way). Per epoch the sampler's order crosses to the device once and one kernel draws every
// sample's crop and flip; per batch one kernel writes the images and labels. Nothing else crosses
// between host and device.
//
//   auto train_data = std::make_shared<DeviceDataset>(*train_set, device);   // one copy, at start
//   DeviceLoader loader(train_data, sampler, cifar10_airbench94_device_augment(), {.batch_size =
//                       1024, .last_batch = LastBatch::drop, .seed = seed});
//   loader.start_epoch(epoch);
//   while (auto batch = loader.next()) { ... batch->images (B, C, H, W) on `device` ... }
//
// For the same sampler, seed and epoch its batches equal the DataLoader's with the matching CPU
// transform (cifar10_train_transform and the others in transforms.h) bit for bit, on any device:
// the draws are augment_geometry.h's, the normalisation a table computed by ToFloat and Normalize
// themselves (device_batch.h). On a cpu device it runs the same element functions in a
// parallel_for.
//
// Which augmentations it has: a random crop of the zero- or reflect-padded image, then a random or
// airbench94's alternating flip, then ToFloat and Normalize — the CIFAR recipes. Test sets: no
// crop, no flip.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/augment_geometry.h"
#include "data/batch_source.h"
#include "data/dataloader.h"
#include "data/dataset.h"
#include "data/sampler.h"

namespace rg::data {

// An augmentation the device data path can run: geometry, then (x / 255 - mean[c]) / std[c].
struct DeviceAugment {
  GeometrySpec geometry{};
  std::vector<float> mean, std;  // Normalize's, one per channel; empty: ToFloat only
};

// The device forms of transforms.h's CIFAR recipes, draw for draw.
DeviceAugment cifar10_train_device_augment();       // cifar10_train_transform()
DeviceAugment cifar10_airbench94_device_augment();  // cifar10_airbench94_transform()
DeviceAugment cifar10_test_device_augment();        // cifar10_test_transform()

// Every image of a data set (all of one shape (C, H, W), u8) and its label, copied to a device
// once. Under DDP every rank holds the whole set: a DistributedSampler's epoch draws each rank's
// samples from all of it.
class DeviceDataset {
 public:
  // Reads every example of `dataset` (decoding it when the set is not cached in memory) and
  // copies the images and labels to `device`. Throws rg::Error naming the data set when images
  // differ in shape or are not u8, and the allocator's out-of-memory error when it does not fit.
  DeviceDataset(const Dataset& dataset, const Device& device);

  const Tensor& images() const { return images_; }  // (N, C, H, W) u8 on the device
  const Tensor& labels() const { return labels_; }  // (N) i64 on the device
  int64_t size() const { return images_.size(0); }
  Device device() const { return images_.device(); }
  int64_t bytes() const { return static_cast<int64_t>(images_.nbytes() + labels_.nbytes()); }
  std::string describe() const { return description_; }

 private:
  Tensor images_, labels_;
  std::string description_;
};

struct DeviceLoaderOptions {
  int64_t batch_size = 128;
  LastBatch last_batch = LastBatch::keep;
  uint64_t seed = 0;         // augmentation randomness (DataLoaderOptions::seed)
  DType dtype = DType::f32;  // of the images: f32, or bf16 / f16 for a 16-bit model's input
  // Of the images: channels_last gathers NHWC batches, the layout a channels-last model takes
  // (the gather writes through any strides), so its input needs no conversion.
  MemoryFormat memory_format = MemoryFormat::contiguous;
};

class DeviceLoader final : public BatchSource {
 public:
  // Throws rg::Error when the augmentation does not fit the images (a crop larger than the padded
  // image, reflect padding not smaller than it, mean/std not one per channel) or an option is bad.
  DeviceLoader(std::shared_ptr<const DeviceDataset> data, std::shared_ptr<Sampler> sampler,
               DeviceAugment augment, DeviceLoaderOptions options);

  void start_epoch(int64_t epoch) override;
  // The next batch on the data's device: images (B, C, out_h, out_w) in options.dtype and
  // options.memory_format, labels
  // (B) i64, and the samples' dataset indices (known on the host: nothing is read back).
  std::optional<Batch> next() override;
  int64_t num_batches() const override;
  int64_t num_samples() const override;
  std::string describe() const override;
  Sampler& sampler() { return *sampler_; }

 private:
  std::shared_ptr<const DeviceDataset> data_;
  std::shared_ptr<Sampler> sampler_;
  DeviceAugment augment_;
  DeviceLoaderOptions options_;
  int64_t out_h_ = 0, out_w_ = 0;
  Tensor table_;                // (C, 256): the normalised value of each u8 value
  std::vector<int64_t> order_;  // this epoch's indices, on the host
  Tensor order_on_device_;      // the same on the device
  Tensor plan_;                 // (n, 3) i64 on the device: each position's crop and flip
  int64_t epoch_ = -1;
  int64_t next_batch_ = 0;
};

namespace detail {
// The normalised value of every u8 value of every channel, (C, 256) in `dtype` on the CPU: what
// the gathers read (device_batch.h).
Tensor normalisation_table(const DeviceAugment& augment, int64_t channels, DType dtype);
}  // namespace detail

}  // namespace rg::data
