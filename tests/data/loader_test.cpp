#include <gtest/gtest.h>

#include <set>

#include "data/dataloader.h"
#include "tests/support/fixtures.h"

namespace rg::data {
namespace {
using rg::testing::throws_error;

// Image i is filled with i (1 channel, 4x4); index 13 fails to load when `broken` is set.
class Counting final : public Dataset {
 public:
  explicit Counting(int64_t n, bool broken = false) : n_(n), broken_(broken) {}
  int64_t size() const override { return n_; }
  Example get(int64_t i) const override {
    check_index(i);
    RG_CHECK(!(broken_ && i == 13), "image 'broken_13.jpg' cannot be decoded");
    return {full({1, 4, 4}, static_cast<double>(i % 256), {DType::u8}), i % 3};
  }
  int64_t num_classes() const override { return 3; }
  std::string describe() const override { return "counting"; }

 private:
  int64_t n_;
  bool broken_;
};

std::vector<std::vector<float>> epoch_images(int workers, int64_t epoch,
                                             PinMemory pin = PinMemory::no) {
  auto ds = std::make_shared<Counting>(50);
  auto transform = std::make_shared<Compose>(std::vector<std::shared_ptr<Transform>>{
      std::make_shared<RandomCrop>(4, 2), std::make_shared<RandomHorizontalFlip>(),
      std::make_shared<ToFloat>()});
  DataLoader loader(
      ds, std::make_shared<RandomSampler>(50, 7), transform,
      {.batch_size = 8, .num_workers = workers, .prefetch = 2, .seed = 3, .pin_memory = pin});
  loader.start_epoch(epoch);
  std::vector<std::vector<float>> out;
  const bool pinned = pin == PinMemory::yes && cuda_device_count() > 0;
  while (auto b = loader.next()) {
    EXPECT_EQ(b->images.is_pinned(), pinned);
    EXPECT_EQ(b->labels.is_pinned(), pinned);
    out.push_back(b->images.to_vector<float>());
  }
  return out;
}

TEST(DataLoader, BatchesIdenticalForAnyWorkerCount) {
  const auto serial = epoch_images(0, 1);
  EXPECT_EQ(serial.size(), 7u);  // 50 = 6 x 8 + 2
  EXPECT_EQ(epoch_images(1, 1), serial);
  EXPECT_EQ(epoch_images(3, 1), serial);
  EXPECT_NE(epoch_images(2, 2), serial);  // another epoch: another shuffle and augmentation
}

// Pinned batches (pinned only where a GPU is usable) hold the same images.
TEST(DataLoader, PinMemoryKeepsTheBatches) {
  EXPECT_EQ(epoch_images(2, 1, PinMemory::yes), epoch_images(0, 1));
}

TEST(DataLoader, CoversEverySampleOnceAndDropsLast) {
  auto ds = std::make_shared<Counting>(50);
  DataLoader loader(ds, std::make_shared<RandomSampler>(50, 1), std::make_shared<ToFloat>(),
                    {.batch_size = 8, .last_batch = LastBatch::drop, .num_workers = 2});
  EXPECT_EQ(loader.num_batches(), 6);
  loader.start_epoch(0);
  std::multiset<int64_t> seen;
  int batches = 0;
  while (auto b = loader.next()) {
    ++batches;
    EXPECT_EQ(b->images.shape(), (Shape{8, 1, 4, 4}));
    EXPECT_EQ(b->labels.dtype(), DType::i64);
    for (std::size_t k = 0; k < b->indices.size(); ++k) {
      seen.insert(b->indices[k]);
      EXPECT_EQ(b->labels.to_vector<int64_t>()[k], b->indices[k] % 3);
      EXPECT_FLOAT_EQ(b->images.select(0, static_cast<int64_t>(k)).to_vector<float>()[0],
                      static_cast<float>(b->indices[k]) / 255.f);
    }
  }
  EXPECT_EQ(batches, 6);
  EXPECT_EQ(seen.size(), 48u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 48u);
}

TEST(DataLoader, WorkerErrorSurfacesAtItsBatch) {
  auto ds = std::make_shared<Counting>(40, /*broken=*/true);
  DataLoader loader(ds, std::make_shared<SequentialSampler>(40), std::make_shared<ToFloat>(),
                    {.batch_size = 4, .num_workers = 2});
  loader.start_epoch(0);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(loader.next().has_value());  // samples 0..11
  EXPECT_TRUE(throws_error([&] { loader.next(); }, {"broken_13.jpg"}));
  EXPECT_FALSE(loader.next().has_value());
}

TEST(DataLoader, BadOptions) {
  auto ds = std::make_shared<Counting>(4);
  auto s = std::make_shared<SequentialSampler>(4);
  EXPECT_TRUE(throws_error([&] { DataLoader{ds, s, nullptr, {.batch_size = 0}}; }, {"batch_size"}));
  EXPECT_TRUE(throws_error(
      [&] {
        DataLoader{ds, s, nullptr, {.num_workers = -1}};
      },
      {"num_workers"}));
  // 20,000 threads used to fail at the first epoch with a bare "Resource temporarily
  // unavailable"; the count is now refused up front.
  EXPECT_TRUE(throws_error(
      [&] {
        DataLoader{ds, s, nullptr, {.num_workers = 20000}};
      },
      {"num_workers", "[0, 256]", "20000"}));
  DataLoader loader(ds, s, nullptr, {});
  EXPECT_TRUE(throws_error([&] { loader.next(); }, {"start_epoch"}));
}

TEST(Sampler, PermutationsBySeedAndEpoch) {
  RandomSampler s(1000, 5);
  const auto e0 = s.indices();
  EXPECT_EQ(std::set<int64_t>(e0.begin(), e0.end()).size(), 1000u);
  s.set_epoch(1);
  EXPECT_NE(s.indices(), e0);
  s.set_epoch(0);
  EXPECT_EQ(s.indices(), e0);
  EXPECT_NE(RandomSampler(1000, 6).indices(), e0);
  EXPECT_EQ(SequentialSampler(3).indices(), (std::vector<int64_t>{0, 1, 2}));
}

TEST(Transforms, CropFlipNormalize) {
  Tensor img = arange(0, 16, 1, {DType::u8}).reshape({1, 4, 4});
  // Padding 0 and a full-size crop is the identity.
  SampleRng rng(1, 0, 0);
  EXPECT_EQ(RandomCrop(4, 0).apply(img, rng).to_vector<int64_t>(), img.to_vector<int64_t>());
  // Every crop of a padded image holds a 4x4 window of the zero-padded original.
  int shifted = 0;
  for (uint64_t i = 0; i < 20; ++i) {
    SampleRng r(1, 0, i);
    std::vector<int64_t> c = RandomCrop(4, 1).apply(img, r).to_vector<int64_t>();
    shifted += c != img.to_vector<int64_t>();
  }
  EXPECT_GT(shifted, 0);
  SampleRng always(0, 0, 0);
  EXPECT_EQ(RandomHorizontalFlip(1.0).apply(img, always).to_vector<int64_t>()[0], 3);
  EXPECT_EQ(RandomHorizontalFlip(0.0).apply(img, always).to_vector<int64_t>()[0], 0);
  Tensor f = ToFloat().apply(full({2, 1, 1}, 255, {DType::u8}), always);
  EXPECT_EQ(Normalize({0.5f, 1.0f}, {0.5f, 2.0f}).apply(f, always).to_vector<float>(),
            (std::vector<float>{1.0f, 0.0f}));
  EXPECT_TRUE(throws_error([&] { Normalize({0.5f}, {0.5f}).apply(f, always); },
                           {"Normalize", "2 channels"}));
  EXPECT_TRUE(
      throws_error([&] { Normalize({0.5f}, {0.5f}).apply(img, always); }, {"ToFloat first"}));
  EXPECT_TRUE(throws_error([&] { RandomCrop(9, 1).apply(img, always); }, {"RandomCrop", "9x9"}));
  EXPECT_TRUE(throws_error([] { RandomHorizontalFlip(2.0); }, {"p must be in [0, 1]"}));
}

// Reflect padding 2 of a 4-wide axis reads, for padded positions 0..7, these source indices
// (F.pad(..., mode='reflect')): the edge pixel is not repeated.
TEST(Transforms, ReflectPaddedCropIsAWindowOfTheMirroredImage) {
  Tensor img = arange(0, 16, 1, {DType::u8}).reshape({1, 4, 4});
  const int64_t src[8] = {2, 1, 0, 1, 2, 3, 2, 1};
  std::set<std::vector<int64_t>> windows;
  for (int64_t top = 0; top < 5; ++top)
    for (int64_t left = 0; left < 5; ++left) {
      std::vector<int64_t> w;
      for (int64_t y = 0; y < 4; ++y)
        for (int64_t x = 0; x < 4; ++x) w.push_back(src[top + y] * 4 + src[left + x]);
      windows.insert(w);
    }
  std::set<std::vector<int64_t>> seen;
  for (uint64_t i = 0; i < 400; ++i) {
    SampleRng r(3, 0, i);
    const std::vector<int64_t> c =
        RandomCrop(4, 2, Padding::reflect).apply(img, r).to_vector<int64_t>();
    ASSERT_TRUE(windows.count(c)) << "sample " << i << " is no window of the reflected image";
    seen.insert(c);
  }
  EXPECT_EQ(seen.size(), windows.size());  // every one of the 25 offsets drawn
  SampleRng r(3, 0, 0);
  EXPECT_TRUE(throws_error([&] { RandomCrop(4, 4, Padding::reflect).apply(img, r); },
                           {"RandomCrop", "reflect padding 4"}));
}

TEST(Transforms, AlternatingFlipMirrorsEachImageEveryOtherEpoch) {
  Tensor img = arange(0, 16, 1, {DType::u8}).reshape({1, 4, 4});
  auto flipped = [&](uint64_t epoch, uint64_t index) {
    SampleRng r(7, epoch, index);
    const int64_t first = AlternatingFlip().apply(img, r).to_vector<int64_t>()[0];
    EXPECT_TRUE(first == 0 || first == 3);
    return first == 3;
  };
  int flipped_in_epoch0 = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    const bool f0 = flipped(0, i);
    flipped_in_epoch0 += f0;
    for (uint64_t e = 1; e < 6; ++e) ASSERT_EQ(flipped(e, i), e % 2 == 1 ? !f0 : f0) << i << e;
  }
  // A fair coin per image in epoch 0.
  EXPECT_GT(flipped_in_epoch0, 70);
  EXPECT_LT(flipped_in_epoch0, 130);
}

}  // namespace
}  // namespace rg::data

namespace rg::data {
namespace {
TEST(Take, EvenlySpacedSoEveryClassAppears) {
  auto ds = take(std::make_shared<Counting>(100), 10);
  EXPECT_EQ(ds->size(), 10);
  std::set<int64_t> labels;
  for (int64_t i = 0; i < 10; ++i) labels.insert(ds->get(i).label);
  EXPECT_EQ(labels.size(), 3u);
  EXPECT_EQ(ds->get(9).image.to_vector<int64_t>()[0], 90);
  EXPECT_EQ(take(std::make_shared<Counting>(5), 0)->size(), 5);
}
}  // namespace
}  // namespace rg::data
