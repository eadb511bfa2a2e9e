#include <gtest/gtest.h>

#include "data/dataloader.h"
#include "data/shapes.h"
#include "tests/support/fixtures.h"

namespace rg::data {
namespace {
using rg::testing::throws_error;

// A 2-D example with distinct values: image (2, 3, 4) of i, mask (3, 4) of i % 5.
SegmentationExample counting_2d() {
  Tensor image = arange(0, 24, 1, {DType::f32}).view({2, 3, 4});
  Tensor mask = empty({3, 4}, {DType::u8});
  for (int i = 0; i < 12; ++i) mask.data<uint8_t>()[i] = static_cast<uint8_t>(i % 5);
  return {image, mask};
}

// A rng whose first uniform() is below 0.5 (it flips at p = 0.5) or not.
SampleRng rng_that(bool flips) {
  for (uint64_t i = 0;; ++i) {
    SampleRng probe(1, 0, i);
    if ((probe.uniform() < 0.5) == flips) return SampleRng(1, 0, i);
  }
}

TEST(SegmentationTransforms, FlipsMoveImageAndMaskAlike) {
  const auto ex = counting_2d();
  auto h = rng_that(true);
  const auto fh = RandomFlipPair(FlipAxis::horizontal).apply(ex, h);
  EXPECT_EQ(fh.image.to_vector<float>()[0], 3);    // (0, 0, 0) <- (0, 0, 3)
  EXPECT_EQ(fh.image.to_vector<float>()[13], 14);  // (1, 0, 1) <- (1, 0, 2)
  EXPECT_EQ(fh.mask.to_vector<int64_t>()[0], 3);
  auto v = rng_that(true);
  const auto fv = RandomFlipPair(FlipAxis::vertical).apply(ex, v);
  EXPECT_EQ(fv.image.to_vector<float>()[1], 9);  // (0, 0, 1) <- (0, 2, 1)
  EXPECT_EQ(fv.mask.to_vector<int64_t>()[1], 9 % 5);
  auto no = rng_that(false);
  EXPECT_EQ(RandomFlipPair(FlipAxis::horizontal).apply(ex, no).image.to_vector<float>(),
            ex.image.to_vector<float>());
  // Depth: a (1, 2, 1, 2) volume of 0..3 turns into 2, 3, 0, 1.
  SegmentationExample vol{arange(0, 4, 1, {DType::f32}).view({1, 2, 1, 2}),
                          from_vector<int64_t>({0, 0, 1, 1}, {2, 1, 2}).to(DType::u8)};
  auto d = rng_that(true);
  const auto fd = RandomFlipPair(FlipAxis::depth).apply(vol, d);
  EXPECT_EQ(fd.image.to_vector<float>(), (std::vector<float>{2, 3, 0, 1}));
  EXPECT_EQ(fd.mask.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 0, 0}));
  auto d2 = rng_that(true);
  EXPECT_TRUE(throws_error([&] { RandomFlipPair(FlipAxis::depth).apply(ex, d2); },
                           {"depth flip needs a volume"}));
  EXPECT_TRUE(throws_error([] { RandomFlipPair(FlipAxis::vertical, 1.5); }, {"p must be"}));
}

TEST(SegmentationTransforms, CropWithPaddingKeepsThePairing) {
  const auto ex = counting_2d();
  // Padding 2 and a 3x4 window: offsets in [0, 4] x [0, 4]; each seed gives one, and the image
  // and mask windows agree wherever the window meets the source.
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SampleRng rng(seed, 0, 0);
    const auto c = RandomCropPair({3, 4}, 2, 7).apply(ex, rng);
    ASSERT_EQ(c.image.shape(), (Shape{2, 3, 4}));
    ASSERT_EQ(c.mask.shape(), (Shape{3, 4}));
    const auto img = c.image.to_vector<float>();
    const auto m = c.mask.to_vector<int64_t>();
    for (int i = 0; i < 12; ++i) {
      if (m[i] == 7) {  // padding: the image is 0 there, in both channels
        EXPECT_EQ(img[i], 0);
        EXPECT_EQ(img[12 + i], 0);
      } else {
        EXPECT_EQ(static_cast<int64_t>(img[i]) % 5, m[i]);  // channel 0 holds the source index
        EXPECT_EQ(img[12 + i], img[i] + 12);
      }
    }
    SampleRng again(seed, 0, 0);
    EXPECT_EQ(RandomCropPair({3, 4}, 2, 7).apply(ex, again).mask.to_vector<int64_t>(), m);
  }
  // A 3-D crop of a (1, 2, 3, 4) volume without padding takes the whole depth.
  SegmentationExample vol{arange(0, 24, 1, {DType::f32}).view({1, 2, 3, 4}),
                          zeros({2, 3, 4}, {DType::u8})};
  SampleRng rng(0, 0, 0);
  EXPECT_EQ(RandomCropPair({2, 3, 4}).apply(vol, rng).image.to_vector<float>(),
            vol.image.to_vector<float>());
  EXPECT_TRUE(throws_error([&] { RandomCropPair({5, 4}).apply(ex, rng); }, {"does not fit"}));
  EXPECT_TRUE(throws_error([&] { RandomCropPair({2, 3, 4}).apply(ex, rng); }, {"3 sizes"}));
  EXPECT_TRUE(throws_error([] { RandomCropPair({3}); }, {"{H, W} or {D, H, W}"}));
  EXPECT_TRUE(throws_error([] { RandomCropPair({3, 0}); }, {"> 0"}));
  EXPECT_TRUE(throws_error([] { RandomCropPair({3, 3}, -1); }, {"padding"}));
}

TEST(SegmentationTransforms, ImageOnlyRefusesTransformsThatMovePixels) {
  EXPECT_TRUE(throws_error([] { ImageOnly(std::make_shared<RandomCrop>(4, 0)); },
                           {"RandomCrop", "without its mask"}));
  EXPECT_TRUE(throws_error(
      [] {
        ImageOnly(std::make_shared<Compose>(std::vector<std::shared_ptr<Transform>>{
            std::make_shared<ToFloat>(), std::make_shared<RandomHorizontalFlip>()}));
      },
      {"moves pixels"}));
  // ToFloat and Normalize take volumes.
  SegmentationExample vol{full({2, 2, 3, 3}, 51, {DType::u8}), zeros({2, 3, 3}, {DType::u8})};
  ComposePair t({std::make_shared<ImageOnly>(std::make_shared<ToFloat>()),
                 std::make_shared<ImageOnly>(std::make_shared<Normalize>(
                     std::vector<float>{0.2f, 0.1f}, std::vector<float>{1.0f, 0.5f}))});
  SampleRng rng(0, 0, 0);
  const auto out = t.apply(vol, rng).image.to_vector<float>();
  EXPECT_NEAR(out[0], 0.0, 1e-6);   // 51 / 255 = 0.2
  EXPECT_NEAR(out[18], 0.2, 1e-6);  // (0.2 - 0.1) / 0.5
}

std::shared_ptr<SegmentationTransform> augment_2d() {
  return std::make_shared<ComposePair>(std::vector<std::shared_ptr<SegmentationTransform>>{
      std::make_shared<RandomCropPair>(std::vector<int64_t>{24, 24}, 4),
      std::make_shared<RandomFlipPair>(FlipAxis::horizontal),
      std::make_shared<RandomFlipPair>(FlipAxis::vertical),
      std::make_shared<ImageOnly>(std::make_shared<ToFloat>())});
}

struct Epoch {
  std::vector<std::vector<float>> images;
  std::vector<std::vector<int64_t>> masks;
  bool operator==(const Epoch&) const = default;
};

Epoch load_epoch(int workers, int64_t epoch, PinMemory pin = PinMemory::no) {
  auto ds = std::make_shared<Shapes>(ShapesOptions{.size = 30, .image_size = {32, 32}});
  DataLoader loader(ds, std::make_shared<RandomSampler>(30, 4), augment_2d(),
                    {.batch_size = 8, .num_workers = workers, .seed = 2, .pin_memory = pin});
  EXPECT_TRUE(loader.is_segmentation());
  loader.start_epoch(epoch);
  Epoch out;
  const bool pinned = pin == PinMemory::yes && cuda_device_count() > 0;
  while (auto b = loader.next()) {
    const int64_t n = static_cast<int64_t>(b->indices.size());
    EXPECT_EQ(b->images.shape(), (Shape{n, 1, 24, 24}));
    EXPECT_EQ(b->masks.shape(), (Shape{n, 24, 24}));
    EXPECT_EQ(b->masks.dtype(), DType::i64);
    EXPECT_FALSE(b->labels.defined());
    EXPECT_EQ(b->images.is_pinned(), pinned);
    EXPECT_EQ(b->masks.is_pinned(), pinned);
    out.images.push_back(b->images.to_vector<float>());
    out.masks.push_back(b->masks.to_vector<int64_t>());
  }
  return out;
}

TEST(SegmentationLoader, BatchesIdenticalForAnyWorkerCount) {
  const Epoch serial = load_epoch(0, 1);
  EXPECT_EQ(serial.images.size(), 4u);  // 30 = 3 x 8 + 6
  EXPECT_EQ(load_epoch(1, 1), serial);
  EXPECT_EQ(load_epoch(3, 1), serial);
  EXPECT_EQ(load_epoch(2, 1, PinMemory::yes), serial);
  EXPECT_NE(load_epoch(2, 2), serial);  // another epoch: another shuffle and augmentation
}

// Noise-free shapes are brighter than their background, so after any crop and flips a pixel is
// bright exactly where the mask says "shape" (padding is dark and background): the loader's
// augmentations moved each mask with its image.
TEST(SegmentationLoader, MasksMoveWithTheirImages) {
  auto ds = std::make_shared<Shapes>(
      ShapesOptions{.size = 40, .image_size = {32, 32}, .max_shapes = 2, .noise = 0});
  DataLoader loader(ds, std::make_shared<RandomSampler>(40, 1), augment_2d(),
                    {.batch_size = 16, .num_workers = 2});
  loader.start_epoch(0);
  int64_t bright = 0;
  while (auto b = loader.next()) {
    const auto images = b->images.to_vector<float>();
    const auto masks = b->masks.to_vector<int64_t>();
    for (std::size_t i = 0; i < images.size(); ++i) {
      ASSERT_EQ(images[i] >= 0.58f, masks[i] == 1) << "element " << i;
      bright += masks[i];
    }
  }
  EXPECT_GT(bright, 1000);
}

TEST(SegmentationLoader, VolumesBatchToFiveDimensions) {
  auto ds = std::make_shared<Shapes>(ShapesOptions{.size = 3, .image_size = {8, 16, 16}});
  auto t = std::make_shared<ComposePair>(std::vector<std::shared_ptr<SegmentationTransform>>{
      std::make_shared<RandomCropPair>(std::vector<int64_t>{4, 8, 8}),
      std::make_shared<RandomFlipPair>(FlipAxis::depth)});
  DataLoader loader(ds, std::make_shared<SequentialSampler>(3), t, {.batch_size = 2});
  loader.start_epoch(0);
  const auto b = loader.next();
  EXPECT_EQ(b->images.shape(), (Shape{2, 1, 4, 8, 8}));
  EXPECT_EQ(b->masks.shape(), (Shape{2, 4, 8, 8}));
  EXPECT_EQ(b->images.dtype(), DType::f32);  // u8 values as f32 without ToFloat
}

// A data set whose sample 2 has a mask value over its class count.
class BadMask final : public SegmentationDataset {
 public:
  int64_t size() const override { return 4; }
  SegmentationExample get(int64_t i) const override {
    check_index(i);
    return {zeros({1, 2, 2}, {DType::u8}), full({2, 2}, i == 2 ? 9 : 1, {DType::u8})};
  }
  int64_t num_classes() const override { return 2; }
  std::string describe() const override { return "bad-mask set"; }
};

TEST(SegmentationLoader, BadSamplesAndAccessors) {
  auto ds = std::make_shared<BadMask>();
  DataLoader loader(ds, std::make_shared<SequentialSampler>(4), nullptr,
                    {.batch_size = 2, .num_workers = 2});
  loader.start_epoch(0);
  EXPECT_TRUE(loader.next().has_value());
  EXPECT_TRUE(throws_error([&] { loader.next(); },
                           {"sample 2 of bad-mask set", "mask value 9", "there are 2"}));
  EXPECT_EQ(loader.segmentation_dataset().describe(), "bad-mask set");
  EXPECT_TRUE(throws_error([&] { loader.dataset(); }, {"segmentation loader"}));
  // Without a transform, the samples come as the data set made them.
  auto shapes = std::make_shared<Shapes>(ShapesOptions{.size = 4, .image_size = {8, 8}});
  DataLoader ok(shapes, std::make_shared<SequentialSampler>(4), nullptr, {.batch_size = 4});
  ok.start_epoch(0);
  EXPECT_EQ(ok.next()->masks.shape(), (Shape{4, 8, 8}));
  EXPECT_TRUE(throws_error(
      [&] {
        DataLoader l(std::shared_ptr<SegmentationDataset>{}, std::make_shared<SequentialSampler>(1),
                     nullptr, {});
      },
      {"dataset and sampler are required"}));
}

TEST(SegmentationTake, EvenlySpacedSubset) {
  auto shapes = std::make_shared<Shapes>(ShapesOptions{.size = 100, .image_size = {8, 8}});
  auto few = take(shapes, 4);
  EXPECT_EQ(few->size(), 4);
  EXPECT_EQ(few->num_classes(), 2);
  EXPECT_EQ(few->get(1).mask.to_vector<int64_t>(), shapes->get(25).mask.to_vector<int64_t>());
  EXPECT_NE(few->describe().find("4 evenly spaced"), std::string::npos);
  EXPECT_EQ(take(shapes, 0), shapes);
  EXPECT_EQ(take(shapes, 500), shapes);
  EXPECT_TRUE(throws_error([&] { few->get(4); }, {"index 4", "out of range"}));
}

}  // namespace
}  // namespace rg::data
