// The device data path and device evaluation on a real GPU (label `gpu`; they skip where there is
// none, and their kernels run through the emulator everywhere in
// tests/kernels/device_batch_kernels_test.cpp): the DeviceLoader's batches on cuda:0 equal the CPU
// DataLoader's bit for bit, the test-time views equal the CPU's, the DeviceEvaluator's totals equal
// the host's, CUDA events time the device — and none of it makes the host wait for the GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "core/cuda/stream.h"
#include "data/batch_views.h"
#include "data/dataloader.h"
#include "data/device_loader.h"
#include "ops/ops.h"
#include "parallel/single_group.h"
#include "tests/data/memory_images.h"
#include "tests/support/fixtures.h"
#include "tests/support/stream_gate.h"
#include "train/device_eval.h"
#include "train/device_timer.h"

namespace rg {
namespace {
using namespace rg::testing;

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.to(Device::cpu()).contiguous(), cb = b.to(Device::cpu()).contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

TEST(GpuDataPath, DeviceLoaderBatchesEqualTheDataLoadersBitForBit) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  const auto dataset = std::make_shared<MemoryImages>(37, 3, 32, 32);
  const auto on_gpu = std::make_shared<data::DeviceDataset>(*dataset, Device::cuda(0));
  struct Recipe {
    std::shared_ptr<data::Transform> transform;
    data::DeviceAugment augment;
  };
  for (const Recipe& r :
       {Recipe{data::cifar10_train_transform(), data::cifar10_train_device_augment()},
        Recipe{data::cifar10_airbench94_transform(), data::cifar10_airbench94_device_augment()},
        Recipe{data::cifar10_test_transform(), data::cifar10_test_device_augment()}})
    for (DType dtype : {DType::f32, DType::bf16}) {
      auto sampler = std::make_shared<data::RandomSampler>(37, 8);
      data::DataLoader host(dataset, sampler, r.transform,
                            {.batch_size = 16, .num_workers = 2, .seed = 3});
      data::DeviceLoader gpu(on_gpu, sampler, r.augment,
                             {.batch_size = 16, .seed = 3, .dtype = dtype});
      for (int epoch = 0; epoch < 2; ++epoch) {
        host.start_epoch(epoch);
        gpu.start_epoch(epoch);
        while (auto want = host.next()) {
          const auto got = gpu.next();
          ASSERT_TRUE(got.has_value());
          EXPECT_EQ(got->images.device(), Device::cuda(0));
          EXPECT_TRUE(same_bytes(got->images, want->images.to(dtype)))
              << r.transform->name() << " " << dtype << " epoch " << epoch;
          EXPECT_EQ(got->labels.to_vector<int64_t>(), want->labels.to_vector<int64_t>());
          EXPECT_EQ(got->indices, want->indices);
        }
        EXPECT_FALSE(gpu.next().has_value());
      }
    }
}

TEST(GpuDataPath, TestTimeViewsEqualTheCpus) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const Tensor x = randn({3, 3, 7, 6}, {DType::f64}).to(dtype);
    const Tensor g = x.to(Device::cuda(0));
    EXPECT_TRUE(same_bytes(data::flip_horizontal(g), data::flip_horizontal(x))) << dtype;
    for (int64_t by : {-1, 1})
      EXPECT_TRUE(same_bytes(data::shift_reflect(g, by), data::shift_reflect(x, by))) << dtype;
    EXPECT_TRUE(same_bytes(data::shifted_view(g, 2, -3, data::Mirror::yes),
                           data::shifted_view(x, 2, -3, data::Mirror::yes)))
        << dtype;
  }
}

TEST(GpuDataPath, DeviceEvaluatorEqualsTheHosts) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  const int64_t n = 301, classes = 10;
  manual_seed(5);
  const Tensor logits = randn({n, classes});
  const Tensor labels = mul(rand({n}), 10.0).to(DType::i64);
  parallel::DistributedSampler sampler(n, 1, 0, {.shuffle = parallel::Shuffle::off});
  parallel::DistributedEvaluator host(sampler);
  train::DeviceEvaluator gpu(sampler, Device::cuda(0));
  for (int64_t start = 0; start < n; start += 64) {
    const int64_t b = std::min<int64_t>(64, n - start);
    host.add(logits.narrow(0, start, b), labels.narrow(0, start, b));
    gpu.add(logits.narrow(0, start, b).to(Device::cuda(0)),
            labels.narrow(0, start, b).to(Device::cuda(0)));
  }
  parallel::SingleGroup world;
  const parallel::EvalTotals want = host.all_ranks(world), got = gpu.all_ranks(world);
  EXPECT_EQ(got.count, n);
  EXPECT_EQ(got.correct, want.correct);
  EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-9 * want.loss_sum);
}

TEST(GpuDataPath, DeviceTimerTimesTheGpusWork) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  const Tensor a = randn({2048, 2048}).to(Device::cuda(0));
  train::DeviceTimer timer(Device::cuda(0));
  Tensor c = a;
  for (int i = 0; i < 10; ++i) c = matmul(c, a);
  timer.stop();
  const double s = timer.seconds();
  EXPECT_GT(s, 0.0);
  EXPECT_LT(s, 10.0);
}

// An epoch's set-up and its batches, and the evaluation's counting, queue their work and return
// while the GPU is held: nothing in them waits for the device.
TEST(GpuDataPath, BatchesAndCountsDoNotWaitForTheGpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable GPU on this machine";
  const MemoryImages dataset(40, 3, 32, 32);
  auto sampler = std::make_shared<data::RandomSampler>(40, 1);
  data::DeviceLoader loader(std::make_shared<data::DeviceDataset>(dataset, Device::cuda(0)),
                            sampler, data::cifar10_airbench94_device_augment(),
                            {.batch_size = 8, .seed = 1});
  parallel::DistributedSampler eval_sampler(40, 1, 0, {.shuffle = parallel::Shuffle::off});
  train::DeviceEvaluator evaluator(eval_sampler, Device::cuda(0));
  const Tensor weight = randn({3 * 32 * 32, 10}).to(Device::cuda(0));
  auto epoch = [&](int64_t e) {
    loader.start_epoch(e);
    while (auto batch = loader.next()) {
      const Tensor logits = matmul(batch->images.reshape({batch->images.size(0), -1}), weight);
      if (e == 1) evaluator.add(logits, batch->labels);
    }
  };
  epoch(0);  // the first fills the caches: pinned blocks, device memory, cuBLAS's handle
  synchronize(Device::cuda(0));
  StreamGate gate(cuda::current_stream(0));
  EXPECT_TRUE(gate.returns_while_closed([&] { epoch(1); }))
      << "the host waited for the GPU while the device data path made an epoch's batches";
  gate.open();
  parallel::SingleGroup world;
  EXPECT_EQ(evaluator.all_ranks(world).count, 40);
}

}  // namespace
}  // namespace rg
