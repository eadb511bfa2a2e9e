// The CUDA runtime's host-side bookkeeping and its no-GPU errors: runs in every CUDA build,
// with or without a GPU (tests/core/cuda/gpu_runtime_test.cpp needs one).
#include <gtest/gtest.h>

#include <thread>

#include "core/cuda/stream.h"
#include "core/device.h"
#include "core/tensor.h"
#include "tests/support/fixtures.h"

namespace rg::cuda {
namespace {
using testing::throws_error;

// An opaque handle that only the bookkeeping sees: no CUDA call is made with it.
cudaStream_t handle(std::uintptr_t n) {
  return reinterpret_cast<cudaStream_t>(n);
}

TEST(CurrentStream, LegacyStreamByDefault) {
  EXPECT_EQ(current_stream(0), cudaStreamLegacy);
  EXPECT_EQ(current_stream(63), cudaStreamLegacy);
}

TEST(CurrentStream, GuardSetsAndRestoresPerDevice) {
  {
    StreamGuard outer(0, handle(0x1000));
    EXPECT_EQ(current_stream(0), handle(0x1000));
    EXPECT_EQ(current_stream(1), cudaStreamLegacy);  // other devices keep theirs
    {
      StreamGuard inner(0, handle(0x2000));
      StreamGuard other(1, handle(0x3000));
      EXPECT_EQ(current_stream(0), handle(0x2000));
      EXPECT_EQ(current_stream(1), handle(0x3000));
    }
    EXPECT_EQ(current_stream(0), handle(0x1000));
    EXPECT_EQ(current_stream(1), cudaStreamLegacy);
  }
  EXPECT_EQ(current_stream(0), cudaStreamLegacy);
}

TEST(CurrentStream, NullMeansTheLegacyStream) {
  StreamGuard guard(0, handle(0x1000));
  set_current_stream(0, nullptr);
  EXPECT_EQ(current_stream(0), cudaStreamLegacy);
}

TEST(CurrentStream, EachHostThreadHasItsOwn) {
  StreamGuard guard(0, handle(0x1000));
  cudaStream_t seen = handle(0x1);
  std::thread([&] { seen = current_stream(0); }).join();
  EXPECT_EQ(seen, cudaStreamLegacy);
  EXPECT_EQ(current_stream(0), handle(0x1000));
}

TEST(CurrentStream, RefusesPerThreadStreamAndBadIndices) {
  EXPECT_TRUE(throws_error([] { set_current_stream(0, cudaStreamPerThread); },
                           {"cudaStreamPerThread", "rg::cuda::Stream"}));
  EXPECT_EQ(current_stream(0), cudaStreamLegacy);
  EXPECT_TRUE(throws_error([] { current_stream(-1); }, {"invalid CUDA device index -1"}));
  EXPECT_TRUE(throws_error([] { set_current_stream(64, nullptr); }, {"index 64"}));
}

TEST(RecordStream, OnlyGpuTensors) {
  EXPECT_TRUE(throws_error([] { record_stream(arange(0, 4), cudaStreamLegacy); },
                           {"record_stream: expected a tensor on a GPU", "[4] f32 cpu"}));
}

TEST(NoGpu, GuardsStreamsAndEventsGiveTheClearError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is usable";
  const std::string no_gpu = "cuda:0 requested but this machine has no usable GPU";
  EXPECT_TRUE(throws_error([] { DeviceGuard guard(0); }, {no_gpu}));
  EXPECT_TRUE(throws_error([] { Stream stream(0); }, {no_gpu}));
  EXPECT_TRUE(throws_error([] { Event event(0); }, {no_gpu}));
  EXPECT_TRUE(throws_error([] { Event event(0, EventTiming::enabled); }, {no_gpu}));
  EXPECT_TRUE(throws_error([] { synchronize(0); }, {no_gpu}));
}

}  // namespace
}  // namespace rg::cuda
