// The memory side of the runtime that runs on every machine: statistics, empty_cache, pinned
// memory and non-blocking copies where no GPU is usable, and the errors they give.
#include <gtest/gtest.h>

#include "core/allocator.h"
#include "core/config.h"
#include "core/tensor.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using testing::throws_error;

// What check_device_available says about cuda:0 in this build on a machine without a GPU.
std::string no_gpu_message() {
  return kWithCuda ? "cuda:0 requested but this machine has no usable GPU"
                   : "cuda:0 requested but this build of ringgrad has no CUDA backend";
}

TEST(Memory, CpuHasNoReservedMemory) {
  Tensor t = empty({1024, 1024});
  const MemoryStats stats = memory_stats(Device::cpu());
  EXPECT_GE(stats.current_bytes, 4 * 1024 * 1024);
  EXPECT_EQ(stats.reserved_bytes, 0);
  EXPECT_EQ(stats.peak_reserved_bytes, 0);
}

TEST(Memory, EmptyCacheOnCpuChangesNothing) {
  Tensor t = arange(0, 1000);
  const MemoryStats before = memory_stats(Device::cpu());
  empty_cache(Device::cpu());
  const MemoryStats after = memory_stats(Device::cpu());
  EXPECT_EQ(after.current_bytes, before.current_bytes);
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(t.to_vector<float>()[999], 999.0f);
}

TEST(Memory, FormatBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(3 << 19), "1.50 MiB");
  EXPECT_EQ(format_bytes(int64_t{78} << 30), "78.00 GiB");
  EXPECT_EQ(format_bytes(int64_t{3} << 40), "3.00 TiB");
  EXPECT_EQ(format_bytes(int64_t{5000} << 40), "5000.00 TiB");
}

TEST(Memory, OnlyCpuMemoryCanBePinned) {
  EXPECT_TRUE(throws_error([] { Storage(16, Device::cuda(0), HostMemory::pinned); },
                           {"only cpu memory can be pinned", "cuda:0"}));
}

TEST(Memory, PlainTensorsAreNotPinned) {
  Tensor x = arange(0, 6).reshape({2, 3});
  EXPECT_FALSE(x.is_pinned());
  EXPECT_FALSE(x.transpose(0, 1).is_pinned());
  EXPECT_FALSE(x.to(DType::f64).is_pinned());
}

TEST(Memory, ToOwnDeviceReturnsSelfEitherWay) {
  Tensor x = arange(0, 6);
  EXPECT_TRUE(x.to(Device::cpu()).same_as(x));
  EXPECT_TRUE(x.to(Device::cpu(), NonBlocking::yes).same_as(x));
  EXPECT_TRUE(x.to(Device::cpu(), NonBlocking::no).same_as(x));
}

TEST(NoGpu, PinMemoryReturnsTheTensorUnpinned) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is usable: tests/core/cuda covers pinning";
  Tensor x = arange(0, 12).reshape({3, 4});
  Tensor y = x.pin_memory();
  EXPECT_TRUE(y.same_as(x));
  EXPECT_FALSE(y.is_pinned());
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  // Asking for pinned storage directly needs a GPU, and says so.
  EXPECT_TRUE(
      throws_error([] { Storage(64, Device::cpu(), HostMemory::pinned); }, {no_gpu_message()}));
}

TEST(NoGpu, CudaMemoryCallsGiveTheClearError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is usable";
  Tensor x = arange(0, 8);
  for (NonBlocking nb : {NonBlocking::no, NonBlocking::yes}) {
    EXPECT_TRUE(throws_error([&] { x.to(Device::cuda(0), nb); }, {no_gpu_message()}));
    EXPECT_TRUE(throws_error([&] { x.pin_memory().to(Device::cuda(0), nb); }, {no_gpu_message()}));
  }
  EXPECT_TRUE(throws_error([] { empty_cache(Device::cuda(0)); }, {no_gpu_message()}));
  EXPECT_TRUE(throws_error([] { zeros({4}, {DType::f32, Device::cuda(0)}); }, {no_gpu_message()}));
  // Statistics of a device never used read as zero, without touching a driver.
  const MemoryStats stats = memory_stats(Device::cuda(0));
  EXPECT_EQ(stats.current_bytes, 0);
  EXPECT_EQ(stats.reserved_bytes, 0);
  EXPECT_EQ(stats.peak_reserved_bytes, 0);
  reset_peak_memory(Device::cuda(0));
}

}  // namespace
}  // namespace rg
