// The device data path on cpu devices (data/device_loader.h): the DeviceLoader's batches equal the
// DataLoader's bit for bit for the same sampler, seed and epoch — on cpu:0 and on a logical device
// standing in for a GPU — every batch of every recipe, under a rank's share of a distributed
// order, with both last-batch rules; the test-time views on any device; and its errors.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "data/batch_views.h"
#include "data/dataloader.h"
#include "data/device_loader.h"
#include "tests/data/memory_images.h"
#include "tests/support/fixtures.h"

namespace rg::data {
namespace {
using rg::testing::MemoryImages;
using rg::testing::throws_error;

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

// A fixed order, standing in for one rank's share of a DistributedSampler (with a repeated
// index, as its padding repeats samples).
class ListSampler final : public Sampler {
 public:
  explicit ListSampler(std::vector<int64_t> order) : order_(std::move(order)) {}
  std::vector<int64_t> indices() const override { return order_; }
  int64_t size() const override { return static_cast<int64_t>(order_.size()); }

 private:
  std::vector<int64_t> order_;
};

struct Recipe {
  const char* name;
  std::shared_ptr<Transform> transform;
  DeviceAugment augment;
};

std::vector<Recipe> recipes() {
  return {{"classic", cifar10_train_transform(), cifar10_train_device_augment()},
          {"airbench94", cifar10_airbench94_transform(), cifar10_airbench94_device_augment()},
          {"test", cifar10_test_transform(), cifar10_test_device_augment()}};
}

// Every batch of `epochs` epochs from both loaders, compared.
void expect_same_batches(const std::shared_ptr<Dataset>& dataset,
                         const std::shared_ptr<Sampler>& sampler, const Recipe& recipe,
                         const Device& device, int64_t batch_size, LastBatch last, uint64_t seed,
                         int epochs) {
  DataLoader host(dataset, sampler, recipe.transform,
                  {.batch_size = batch_size, .last_batch = last, .num_workers = 2, .seed = seed});
  DeviceLoader on_device(std::make_shared<DeviceDataset>(*dataset, device), sampler, recipe.augment,
                         {.batch_size = batch_size, .last_batch = last, .seed = seed});
  ASSERT_EQ(on_device.num_batches(), host.num_batches());
  ASSERT_EQ(on_device.num_samples(), host.num_samples());
  for (int epoch = 0; epoch < epochs; ++epoch) {
    host.start_epoch(epoch);
    on_device.start_epoch(epoch);
    int64_t batches = 0;
    while (auto want = host.next()) {
      auto got = on_device.next();
      ASSERT_TRUE(got.has_value()) << recipe.name << " epoch " << epoch;
      EXPECT_EQ(got->images.device(), device);
      EXPECT_EQ(got->labels.device(), device);
      EXPECT_TRUE(same_bytes(got->images.to(Device::cpu()), want->images))
          << recipe.name << " epoch " << epoch << " batch " << batches;
      EXPECT_EQ(got->labels.to_vector<int64_t>(), want->labels.to_vector<int64_t>());
      EXPECT_EQ(got->indices, want->indices);
      ++batches;
    }
    EXPECT_FALSE(on_device.next().has_value());
    EXPECT_EQ(batches, host.num_batches());
  }
}

TEST(DeviceLoader, BatchesEqualTheDataLoadersOnEveryCpuDevice) {
  const auto dataset = std::make_shared<MemoryImages>(23, 3, 32, 32);
  for (const Recipe& recipe : recipes())
    for (const Device device : {Device::cpu(), Device::cpu(1)})
      for (LastBatch last : {LastBatch::keep, LastBatch::drop})
        expect_same_batches(dataset, std::make_shared<RandomSampler>(23, 9), recipe, device, 8,
                            last, 4, 3);
}

TEST(DeviceLoader, ARanksShareWithRepeatsAndADifferentSeed) {
  const auto dataset = std::make_shared<MemoryImages>(12, 3, 32, 32, 3);
  const auto share = std::make_shared<ListSampler>(std::vector<int64_t>{11, 3, 7, 0, 5, 3, 9});
  for (const Recipe& recipe : recipes())
    expect_same_batches(dataset, share, recipe, Device::cpu(), 3, LastBatch::keep, 77, 2);
}

TEST(DeviceLoader, SixteenBitImagesAreTheF32BatchRounded) {
  const auto dataset = std::make_shared<MemoryImages>(6, 3, 32, 32);
  auto sampler = std::make_shared<RandomSampler>(6, 1);
  DataLoader host(dataset, sampler, cifar10_airbench94_transform(),
                  {.batch_size = 6, .num_workers = 0, .seed = 2});
  DeviceLoader bf16(std::make_shared<DeviceDataset>(*dataset, Device::cpu()), sampler,
                    cifar10_airbench94_device_augment(),
                    {.batch_size = 6, .seed = 2, .dtype = DType::bf16});
  host.start_epoch(1);
  bf16.start_epoch(1);
  const Tensor want = host.next()->images.to(DType::bf16);
  EXPECT_TRUE(same_bytes(bf16.next()->images, want));
}

// Channels-last batches (a channels-last model's input): the same values, NHWC strides.
TEST(DeviceLoader, ChannelsLastBatchesAreTheSameImagesInNhwc) {
  const auto dataset = std::make_shared<MemoryImages>(7, 3, 32, 32);
  auto sampler = std::make_shared<RandomSampler>(7, 3);
  for (DType dtype : {DType::f32, DType::bf16}) {
    DeviceLoader nchw(std::make_shared<DeviceDataset>(*dataset, Device::cpu()), sampler,
                      cifar10_airbench94_device_augment(),
                      {.batch_size = 4, .seed = 5, .dtype = dtype});
    DeviceLoader nhwc(
        std::make_shared<DeviceDataset>(*dataset, Device::cpu()), sampler,
        cifar10_airbench94_device_augment(),
        {.batch_size = 4, .seed = 5, .dtype = dtype, .memory_format = MemoryFormat::channels_last});
    nchw.start_epoch(2);
    nhwc.start_epoch(2);
    while (auto want = nchw.next()) {
      const auto got = nhwc.next();
      ASSERT_TRUE(got.has_value());
      EXPECT_TRUE(got->images.is_contiguous(MemoryFormat::channels_last));
      EXPECT_FALSE(got->images.is_contiguous());
      EXPECT_TRUE(same_bytes(got->images, want->images)) << dtype;
      EXPECT_EQ(got->labels.to_vector<int64_t>(), want->labels.to_vector<int64_t>());
    }
  }
}

TEST(DeviceLoader, DeviceDatasetHoldsEveryImageAndLabel) {
  const MemoryImages dataset(5, 3, 4, 6);
  const DeviceDataset on_device(dataset, Device::cpu(1));
  EXPECT_EQ(on_device.images().shape(), (Shape{5, 3, 4, 6}));
  EXPECT_EQ(on_device.images().device(), Device::cpu(1));
  EXPECT_EQ(on_device.bytes(), 5 * 3 * 4 * 6 + 5 * 8);
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_TRUE(
        same_bytes(on_device.images().select(0, i).to(Device::cpu()), dataset.get(i).image));
    EXPECT_EQ(on_device.labels().to_vector<int64_t>()[static_cast<std::size_t>(i)],
              dataset.get(i).label);
  }
}

// Images of two shapes (a data set that does not stack).
class MixedSizes final : public Dataset {
 public:
  int64_t size() const override { return 3; }
  Example get(int64_t i) const override { return {zeros({3, 4, i == 2 ? 5 : 4}, {DType::u8}), 0}; }
  int64_t num_classes() const override { return 1; }
  std::string describe() const override { return "mixed sizes"; }
};

TEST(DeviceLoader, BadInputsAreClearErrors) {
  EXPECT_TRUE(throws_error([] { DeviceDataset(MixedSizes(), Device::cpu()); },
                           {"DeviceDataset", "image 2", "mixed sizes", "one shape"}));
  EXPECT_TRUE(throws_error([] { DeviceDataset(MemoryImages(0, 3, 4, 4), Device::cpu()); },
                           {"DeviceDataset", "empty"}));
  const auto small = std::make_shared<DeviceDataset>(MemoryImages(4, 3, 8, 8), Device::cpu());
  const auto sampler = std::make_shared<SequentialSampler>(4);
  // The train recipe crops 32x32 from 8x8 images padded by 4.
  EXPECT_TRUE(
      throws_error([&] { DeviceLoader(small, sampler, cifar10_train_device_augment(), {}); },
                   {"DeviceLoader", "32x32 crop does not fit", "8x8"}));
  DeviceAugment reflect = cifar10_airbench94_device_augment();
  reflect.geometry.crop = 8;
  reflect.geometry.padding = 8;
  EXPECT_TRUE(throws_error([&] { DeviceLoader(small, sampler, reflect, {}); },
                           {"reflect padding 8", "smaller than the images"}));
  DeviceAugment two_channels = cifar10_test_device_augment();
  two_channels.mean.pop_back();
  two_channels.std.pop_back();
  EXPECT_TRUE(throws_error([&] { DeviceLoader(small, sampler, two_channels, {}); },
                           {"Normalize", "3 channels"}));
  EXPECT_TRUE(throws_error(
      [&] { DeviceLoader(small, sampler, cifar10_test_device_augment(), {.batch_size = 0}); },
      {"batch_size must be > 0"}));
  EXPECT_TRUE(throws_error(
      [&] { DeviceLoader(small, sampler, cifar10_test_device_augment(), {.dtype = DType::u8}); },
      {"DeviceLoader", "u8"}));
  DeviceLoader loader(small, sampler, cifar10_test_device_augment(), {});
  EXPECT_TRUE(throws_error([&] { loader.next(); }, {"start_epoch"}));
  DeviceLoader beyond(small, std::make_shared<SequentialSampler>(5), cifar10_test_device_augment(),
                      {});
  EXPECT_TRUE(throws_error([&] { beyond.start_epoch(0); }, {"index 4", "outside the 4 samples"}));
}

TEST(DeviceLoader, WithoutAGpuACudaDeviceIsTheClearError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_TRUE(
      throws_error([] { DeviceDataset(MemoryImages(2, 3, 4, 4), Device::cuda(0)); }, {"cuda:0"}));
}

// The test-time views equal plain loops on any device, and refuse what they cannot do.
TEST(BatchViews, MirrorAndShiftsOnAnyDevice) {
  const Tensor img = arange(0, 9, 1).reshape({1, 1, 3, 3});  // rows 0 1 2 / 3 4 5 / 6 7 8
  for (const Device device : {Device::cpu(), Device::cpu(1)}) {
    const Tensor x = img.to(device);
    EXPECT_EQ(flip_horizontal(x).device(), device);
    EXPECT_EQ(flip_horizontal(x).to_vector<float>(),
              (std::vector<float>{2, 1, 0, 5, 4, 3, 8, 7, 6}));
    EXPECT_EQ(shift_reflect(x, -1).to_vector<float>(),
              (std::vector<float>{4, 3, 4, 1, 0, 1, 4, 3, 4}));
    EXPECT_EQ(shift_reflect(x, 1).to_vector<float>(),
              (std::vector<float>{4, 5, 4, 7, 8, 7, 4, 5, 4}));
    // Shifted, then mirrored: the mirror image of the shift (a TTA view's mirror).
    EXPECT_EQ(shifted_view(x, 1, 1, Mirror::yes).to_vector<float>(),
              flip_horizontal(shift_reflect(x, 1)).to_vector<float>());
    EXPECT_NE(shifted_view(x, 1, 1, Mirror::yes).to_vector<float>(),
              shift_reflect(flip_horizontal(x), 1).to_vector<float>());
  }
  // A strided (transposed) batch is read as the values it holds.
  EXPECT_EQ(flip_horizontal(img.transpose(2, 3)).to_vector<float>(),
            (std::vector<float>{6, 3, 0, 7, 4, 1, 8, 5, 2}));
  EXPECT_TRUE(throws_error([&] { shift_reflect(img, 2); }, {"shift_reflect"}));
  EXPECT_TRUE(throws_error([&] { flip_horizontal(img.reshape({3, 3})); }, {"flip_horizontal"}));
  EXPECT_TRUE(throws_error([&] { flip_horizontal(img.to(DType::u8)); }, {"flip_horizontal"}));
  EXPECT_TRUE(throws_error([&] { shifted_view(img, 3, 0, Mirror::no); }, {"reflects beyond"}));
}

}  // namespace
}  // namespace rg::data
