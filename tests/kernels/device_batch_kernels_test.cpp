// The device data path's GPU kernels (data/device_batch_kernels.cuh) through the emulator, against
// the CPU DataLoader: for the same sampler, seed, epoch and indices, the emulated kernels' batch
// equals the DataLoader's with the matching CPU transform bit for bit — the CIFAR recipes (classic
// crop-and-flip, airbench94's reflect-padded translation and alternating flip, the test
// transform), other crops on non-square images, 16-bit outputs and channels-last strides. And the
// test-time views (mirror, shifts with reflection) against a plain loop.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "data/dataloader.h"
#include "data/device_batch_kernels.cuh"
#include "data/device_loader.h"
#include "tests/data/memory_images.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using data::DeviceAugment;
using data::FlipMode;
using data::Padding;

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

struct Epoch {
  std::vector<data::Batch> batches;
};

// One epoch as the DeviceLoader makes it on a GPU, with the emulated kernels: the order's plan,
// then a gather per batch (into `layout`'s strides: NCHW, or NHWC through a transposed view).
enum class Layout { nchw, nhwc };
Epoch emulated_epoch(const data::Dataset& dataset, data::Sampler& sampler,
                     const DeviceAugment& augment, int64_t batch_size, data::LastBatch last,
                     uint64_t seed, int64_t epoch, DType dtype = DType::f32,
                     Layout layout = Layout::nchw) {
  const data::DeviceDataset on_device(dataset, Device::cpu());
  const int64_t c = on_device.images().size(1), h = on_device.images().size(2),
                w = on_device.images().size(3);
  sampler.set_epoch(epoch);
  const std::vector<int64_t> order = sampler.indices();
  const auto n = static_cast<int64_t>(order.size());
  const Tensor order_t = from_vector<int64_t>(order, {n}, {DType::i64});
  const Tensor plan = empty({n, 3}, {DType::i64});
  launch_plan_epoch(order_t, augment.geometry, seed, static_cast<uint64_t>(epoch), h, w, plan,
                    nullptr);
  const data::detail::GatherInputs in{.images = on_device.images(),
                                      .labels = on_device.labels(),
                                      .order = order_t,
                                      .plan = plan,
                                      .table = data::detail::normalisation_table(augment, c, dtype),
                                      .spec = augment.geometry};
  const int64_t out_h = augment.geometry.crop > 0 ? augment.geometry.crop : h;
  const int64_t out_w = augment.geometry.crop > 0 ? augment.geometry.crop : w;
  const int64_t samples = last == data::LastBatch::drop ? n / batch_size * batch_size : n;
  Epoch e;
  for (int64_t start = 0; start < samples; start += batch_size) {
    const int64_t b = std::min(batch_size, samples - start);
    data::Batch batch;
    batch.images = layout == Layout::nchw
                       ? empty({b, c, out_h, out_w}, {dtype})
                       : empty({b, out_h, out_w, c}, {dtype}).transpose(1, 3).transpose(2, 3);
    batch.labels = empty({b}, {DType::i64});
    launch_gather_batch(in, start, batch.images, batch.labels, nullptr);
    batch.indices.assign(order.begin() + start, order.begin() + start + b);
    e.batches.push_back(std::move(batch));
  }
  return e;
}

Epoch cpu_epoch(const std::shared_ptr<data::Dataset>& dataset,
                const std::shared_ptr<data::Sampler>& sampler,
                const std::shared_ptr<data::Transform>& transform, int64_t batch_size,
                data::LastBatch last, uint64_t seed, int64_t epoch) {
  data::DataLoader loader(
      dataset, sampler, transform,
      {.batch_size = batch_size, .last_batch = last, .num_workers = 0, .seed = seed});
  loader.start_epoch(epoch);
  Epoch e;
  while (auto b = loader.next()) e.batches.push_back(std::move(*b));
  return e;
}

// The emulated kernels' epoch equals the DataLoader's, batch by batch, bit for bit.
void expect_same_epoch(const std::shared_ptr<data::Dataset>& dataset,
                       const std::shared_ptr<data::Transform>& transform,
                       const DeviceAugment& augment, int64_t batch_size, data::LastBatch last,
                       uint64_t seed, int64_t epoch, DType dtype = DType::f32,
                       Layout layout = Layout::nchw) {
  auto sampler = std::make_shared<data::RandomSampler>(dataset->size(), seed + 100);
  const Epoch want = cpu_epoch(dataset, sampler, transform, batch_size, last, seed, epoch);
  const Epoch got =
      emulated_epoch(*dataset, *sampler, augment, batch_size, last, seed, epoch, dtype, layout);
  ASSERT_EQ(got.batches.size(), want.batches.size());
  for (std::size_t b = 0; b < want.batches.size(); ++b) {
    const data::Batch &g = got.batches[b], &w = want.batches[b];
    EXPECT_TRUE(same_bytes(g.images, w.images.to(dtype)))
        << transform->name() << " seed " << seed << " epoch " << epoch << " batch " << b << " "
        << dtype << " " << g.images.describe() << " vs " << w.images.describe();
    EXPECT_EQ(g.labels.to_vector<int64_t>(), w.labels.to_vector<int64_t>()) << "batch " << b;
    EXPECT_EQ(g.indices, w.indices) << "batch " << b;
  }
}

std::shared_ptr<data::Dataset> cifar_like(int64_t n) {
  return std::make_shared<testing::MemoryImages>(n, 3, 32, 32);
}

TEST(DeviceBatchKernels, ClassicRecipeEqualsTheDataLoaderBitForBit) {
  // 11 images in batches of 4: two full batches and a short one.
  const auto dataset = cifar_like(11);
  for (uint64_t seed : {0ull, 5ull})
    for (int64_t epoch : {0, 1})
      expect_same_epoch(dataset, data::cifar10_train_transform(),
                        data::cifar10_train_device_augment(), 4, data::LastBatch::keep, seed,
                        epoch);
}

TEST(DeviceBatchKernels, Airbench94RecipeEqualsTheDataLoaderInEveryEpochParity) {
  // The alternating flip inverts in odd epochs: three epochs see both parities and a reshuffle.
  const auto dataset = cifar_like(10);
  for (int64_t epoch : {0, 1, 2})
    expect_same_epoch(dataset, data::cifar10_airbench94_transform(),
                      data::cifar10_airbench94_device_augment(), 4, data::LastBatch::drop, 3,
                      epoch);
}

TEST(DeviceBatchKernels, TestTransformEqualsTheDataLoader) {
  expect_same_epoch(cifar_like(7), data::cifar10_test_transform(),
                    data::cifar10_test_device_augment(), 3, data::LastBatch::keep, 0, 0);
}

TEST(DeviceBatchKernels, OtherCropsAndFlipsOnNonSquareImages) {
  // 10 x 9 images: a reflect-padded crop smaller than the image with a biased random flip, and a
  // zero-padded crop larger than the image (the padding shows), with other mean and std.
  const auto dataset = std::make_shared<testing::MemoryImages>(9, 3, 10, 9, 7);
  const std::vector<float> mean = {0.3f, 0.6f, 0.5f}, std = {0.2f, 0.31f, 0.45f};
  struct Case {
    int64_t crop, padding;
    Padding mode;
    double p;
  };
  for (const Case& k : {Case{7, 3, Padding::reflect, 0.3}, Case{12, 2, Padding::zeros, 0.8},
                        Case{9, 0, Padding::zeros, 1.0}}) {
    const auto transform =
        std::make_shared<data::Compose>(std::vector<std::shared_ptr<data::Transform>>{
            std::make_shared<data::RandomCrop>(k.crop, k.padding, k.mode),
            std::make_shared<data::RandomHorizontalFlip>(k.p), std::make_shared<data::ToFloat>(),
            std::make_shared<data::Normalize>(mean, std)});
    const DeviceAugment augment{.geometry = {.crop = k.crop,
                                             .padding = k.padding,
                                             .padding_mode = k.mode,
                                             .flip = FlipMode::random,
                                             .flip_probability = k.p},
                                .mean = mean,
                                .std = std};
    SCOPED_TRACE("crop " + std::to_string(k.crop) + " padding " + std::to_string(k.padding));
    expect_same_epoch(dataset, transform, augment, 4, data::LastBatch::keep, 11, 1);
  }
}

TEST(DeviceBatchKernels, SixteenBitBatchesAreTheF32BatchesRounded) {
  const auto dataset = cifar_like(6);
  for (DType dtype : {DType::bf16, DType::f16, DType::f64})
    expect_same_epoch(dataset, data::cifar10_airbench94_transform(),
                      data::cifar10_airbench94_device_augment(), 3, data::LastBatch::keep, 1, 1,
                      dtype);
}

TEST(DeviceBatchKernels, ChannelsLastOutputHoldsTheSameBatch) {
  // The gather writes through the output's strides: an NHWC buffer seen as (B, C, H, W).
  expect_same_epoch(cifar_like(5), data::cifar10_train_transform(),
                    data::cifar10_train_device_augment(), 5, data::LastBatch::keep, 2, 0,
                    DType::f32, Layout::nhwc);
  expect_same_epoch(cifar_like(5), data::cifar10_airbench94_transform(),
                    data::cifar10_airbench94_device_augment(), 2, data::LastBatch::keep, 2, 1,
                    DType::bf16, Layout::nhwc);
}

// out[n][c][y][x] = in[n][c][r(y + dy)][r(x' + dx)], x' mirrored when asked, r reflecting.
Tensor reference_view(const Tensor& images, int64_t dy, int64_t dx, bool mirror) {
  const Tensor in = images.to(DType::f64).contiguous();
  const int64_t planes = in.size(0) * in.size(1), h = in.size(2), w = in.size(3);
  auto r = [](int64_t i, int64_t n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; };
  std::vector<double> out(static_cast<std::size_t>(in.numel()));
  const double* p = in.data<double>();
  for (int64_t q = 0; q < planes; ++q)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const int64_t sx = r((mirror ? w - 1 - x : x) + dx, w), sy = r(y + dy, h);
        out[static_cast<std::size_t>((q * h + y) * w + x)] = p[(q * h + sy) * w + sx];
      }
  return from_vector<double>(out, in.shape(), {DType::f64}).to(images.dtype());
}

TEST(DeviceBatchKernels, TestTimeViewsMatchAPlainLoopInEveryDtype) {
  struct Shift {
    int64_t dy, dx;
    data::Mirror mirror;
  };
  for (DType dtype : testing::kFloatingDtypes) {
    const Tensor images = randn({2, 3, 5, 4}, {DType::f64}).to(dtype);
    for (const Shift& s : {Shift{0, 0, data::Mirror::yes}, Shift{-1, -1, data::Mirror::no},
                           Shift{1, 1, data::Mirror::yes}, Shift{2, -3, data::Mirror::yes},
                           Shift{-4, 3, data::Mirror::no}}) {
      const Tensor out = empty_like(images);
      launch_shifted_view(images, s.dy, s.dx, s.mirror, out, nullptr);
      EXPECT_TRUE(
          same_bytes(out, reference_view(images, s.dy, s.dx, s.mirror == data::Mirror::yes)))
          << dtype << " shift " << s.dy << "," << s.dx;
    }
  }
}

}  // namespace
}  // namespace rg
