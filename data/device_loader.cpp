#include "data/device_loader.h"

#include <algorithm>
#include <cstring>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "data/device_batch.h"
#include "data/transforms.h"

namespace rg::data {

DeviceAugment cifar10_train_device_augment() {
  // RandomCrop(32, 4), RandomHorizontalFlip(0.5), ToFloat, Normalize.
  return {.geometry = {.crop = 32,
                       .padding = 4,
                       .padding_mode = Padding::zeros,
                       .flip = FlipMode::random,
                       .flip_probability = 0.5},
          .mean = kCifar10Mean,
          .std = kCifar10Std};
}

DeviceAugment cifar10_airbench94_device_augment() {
  // RandomCrop(32, 2, reflect), AlternatingFlip, ToFloat, Normalize.
  return {.geometry = {.crop = 32,
                       .padding = 2,
                       .padding_mode = Padding::reflect,
                       .flip = FlipMode::alternating},
          .mean = kCifar10Mean,
          .std = kCifar10Std};
}

DeviceAugment cifar10_test_device_augment() {
  return {.geometry = {}, .mean = kCifar10Mean, .std = kCifar10Std};
}

// ---- the data set on the device ---------------------------------------------------------------

DeviceDataset::DeviceDataset(const Dataset& dataset, const Device& device) {
  description_ = dataset.describe() + " on " + device.str();
  const int64_t n = dataset.size();
  RG_CHECK(n > 0, "DeviceDataset: the data set ", dataset.describe(), " is empty");
  const Example first = dataset.get(0);
  RG_CHECK(first.image.dim() == 3 && first.image.dtype() == DType::u8,
           "DeviceDataset: ", dataset.describe(), " gives images ", first.image.describe(),
           "; the device data path takes u8 images (C, H, W)");
  const Shape shape = first.image.shape();
  const int64_t image_bytes = first.image.numel();
  Tensor images = empty({n, shape[0], shape[1], shape[2]}, {DType::u8, Device::cpu()});
  std::vector<int64_t> labels(static_cast<std::size_t>(n));
  uint8_t* dst = images.data<uint8_t>();
  // In parallel: a data set that is not cached decodes its files here.
  parallel_for(n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const Example ex = dataset.get(i);
      RG_CHECK(ex.image.shape() == shape && ex.image.dtype() == DType::u8, "DeviceDataset: image ",
               i, " of ", dataset.describe(), " is ", ex.image.describe(), ", unlike image 0 ",
               first.image.describe(), ": the device data path stacks images of one shape");
      const Tensor src = ex.image.contiguous();
      std::memcpy(dst + i * image_bytes, src.data<uint8_t>(),
                  static_cast<std::size_t>(image_bytes));
      labels[static_cast<std::size_t>(i)] = ex.label;
    }
  });
  images_ = images.to(device);
  labels_ = from_vector<int64_t>(labels, {n}, {DType::i64, Device::cpu()}).to(device);
}

// ---- the loader -------------------------------------------------------------------------------

namespace detail {
// Made by the CPU transforms themselves: the device path's batches then equal theirs bit for bit
// (device_batch.h).
Tensor normalisation_table(const DeviceAugment& augment, int64_t channels, DType dtype) {
  Tensor levels = empty({channels, 1, 256}, {DType::u8, Device::cpu()});
  uint8_t* v = levels.data<uint8_t>();
  for (int64_t c = 0; c < channels; ++c)
    for (int value = 0; value < 256; ++value) v[c * 256 + value] = static_cast<uint8_t>(value);
  SampleRng unused(0, 0, 0);
  Tensor table = ToFloat().apply(levels, unused);
  if (!augment.mean.empty()) table = Normalize(augment.mean, augment.std).apply(table, unused);
  return table.reshape({channels, 256}).to(dtype);
}
}  // namespace detail

DeviceLoader::DeviceLoader(std::shared_ptr<const DeviceDataset> data,
                           std::shared_ptr<Sampler> sampler, DeviceAugment augment,
                           DeviceLoaderOptions options)
    : data_(std::move(data)),
      sampler_(std::move(sampler)),
      augment_(std::move(augment)),
      options_(options) {
  RG_CHECK(data_ && sampler_, "DeviceLoader: data and sampler are required");
  RG_CHECK(options_.batch_size > 0, "DeviceLoader: batch_size must be > 0, got ",
           options_.batch_size);
  RG_CHECK(is_floating(options_.dtype), "DeviceLoader: images come as f32, f64, f16 or bf16, not ",
           options_.dtype);
  const GeometrySpec& g = augment_.geometry;
  const int64_t channels = data_->images().size(1), height = data_->images().size(2),
                width = data_->images().size(3);
  // The checks of RandomCrop and RandomHorizontalFlip (transforms.cpp), with their words.
  RG_CHECK(g.crop >= 0 && g.padding >= 0, "DeviceLoader: crop size must be >= 0 (0: none) and ",
           "padding >= 0, got crop ", g.crop, " padding ", g.padding);
  RG_CHECK(g.crop > 0 || g.padding == 0, "DeviceLoader: padding ", g.padding,
           " without a crop (crop 0) would change nothing; set a crop size");
  RG_CHECK(g.crop == 0 || (height + 2 * g.padding >= g.crop && width + 2 * g.padding >= g.crop),
           "DeviceLoader: a ", g.crop, "x", g.crop, " crop does not fit the images ", height, "x",
           width, " of ", data_->describe(), " padded by ", g.padding);
  RG_CHECK(g.padding_mode == Padding::zeros || (g.padding < height && g.padding < width),
           "DeviceLoader: reflect padding ", g.padding, " must be smaller than the images ", height,
           "x", width);
  RG_CHECK(g.flip_probability >= 0 && g.flip_probability <= 1,
           "DeviceLoader: the flip probability must be in [0, 1], got ", g.flip_probability);
  out_h_ = g.crop > 0 ? g.crop : height;
  out_w_ = g.crop > 0 ? g.crop : width;
  table_ = detail::normalisation_table(augment_, channels, options_.dtype).to(data_->device());
}

int64_t DeviceLoader::num_samples() const {
  const int64_t n = sampler_->size();
  return options_.last_batch == LastBatch::drop ? n / options_.batch_size * options_.batch_size : n;
}

int64_t DeviceLoader::num_batches() const {
  return (num_samples() + options_.batch_size - 1) / options_.batch_size;
}

std::string DeviceLoader::describe() const {
  return data_->describe();
}

void DeviceLoader::start_epoch(int64_t epoch) {
  sampler_->set_epoch(epoch);
  epoch_ = epoch;
  next_batch_ = 0;
  order_ = sampler_->indices();
  const int64_t n = static_cast<int64_t>(order_.size()), size = data_->size();
  for (int64_t index : order_)
    RG_CHECK(index >= 0 && index < size, "DeviceLoader: the sampler gave index ", index,
             ", outside the ", size, " samples of ", data_->describe());
  const Device device = data_->device();
  const Tensor host = from_vector<int64_t>(order_, {n}, {DType::i64, Device::cpu()});
  // Pinned, the copy is queued behind the work already on the device and the host goes on.
  order_on_device_ =
      device.is_cuda() ? host.pin_memory().to(device, NonBlocking::yes) : host.to(device);
  plan_ = empty({n, 3}, {DType::i64, device});
  dispatch_device<Kernels::cpu_and_cuda>("DeviceLoader", device, [&](auto on) {
    detail::plan_epoch(on, order_on_device_, augment_.geometry, options_.seed,
                       static_cast<uint64_t>(epoch), data_->images().size(2),
                       data_->images().size(3), plan_);
  });
}

std::optional<Batch> DeviceLoader::next() {
  RG_CHECK(epoch_ >= 0, "DeviceLoader: call start_epoch(epoch) before next()");
  if (next_batch_ >= num_batches()) return std::nullopt;
  const int64_t start = next_batch_++ * options_.batch_size;
  const int64_t b = std::min(options_.batch_size, num_samples() - start);
  const Device device = data_->device();
  Batch batch;
  batch.images = empty({b, data_->images().size(1), out_h_, out_w_}, {options_.dtype, device},
                       options_.memory_format);
  batch.labels = empty({b}, {DType::i64, device});
  const detail::GatherInputs inputs{.images = data_->images(),
                                    .labels = data_->labels(),
                                    .order = order_on_device_,
                                    .plan = plan_,
                                    .table = table_,
                                    .spec = augment_.geometry};
  dispatch_device<Kernels::cpu_and_cuda>("DeviceLoader", device, [&](auto on) {
    detail::gather_batch(on, inputs, start, batch.images, batch.labels);
  });
  batch.indices.assign(order_.begin() + start, order_.begin() + start + b);
  return batch;
}

}  // namespace rg::data
