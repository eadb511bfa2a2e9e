// The CUDA runtime on a real GPU: async copies, stream ordering, the allocator's statistics,
// reuse and out-of-memory error, pinned memory. Every test skips, saying so, where no GPU is
// usable (CTest label `gpu`; scripts/gpu_check.sh runs them where one is).
#include <gtest/gtest.h>

#include "core/allocator.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/stream.h"
#include "core/tensor.h"
#include "core/trace.h"
#include "tests/support/fixtures.h"
#include "tests/support/stream_gate.h"
#include "tests/support/trace_check.h"

namespace rg::cuda {
namespace {
using testing::throws_error;

#define RG_REQUIRE_GPU()       \
  if (cuda_device_count() < 1) \
  GTEST_SKIP() << "no usable GPU on this machine (the CUDA runtime reports no device or driver)"

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(GpuDeviceGuard, SetsAndRestoresTheDevice) {
  RG_REQUIRE_GPU();
  const int last = cuda_device_count() - 1;
  RG_CUDA_CHECK(cudaSetDevice(0));
  {
    DeviceGuard guard(last);
    int now = -1;
    RG_CUDA_CHECK(cudaGetDevice(&now));
    EXPECT_EQ(now, last);
  }
  int after = -1;
  RG_CUDA_CHECK(cudaGetDevice(&after));
  EXPECT_EQ(after, 0);
}

TEST(GpuCopy, PinnedNonBlockingRoundTrip) {
  RG_REQUIRE_GPU();
  Tensor source = arange(0, 1 << 20);
  const int64_t before = memory_stats(Device::cpu()).current_bytes;
  Tensor x = source.pin_memory();
  ASSERT_TRUE(x.is_pinned());
  // Pinned memory is host memory: it counts on the cpu.
  EXPECT_EQ(memory_stats(Device::cpu()).current_bytes, before + static_cast<int64_t>(x.nbytes()));
  Tensor on_gpu = x.to(Device::cuda(0), NonBlocking::yes);
  // The copy back runs on the same (current) stream, after the asynchronous one.
  EXPECT_EQ(on_gpu.to(Device::cpu()).to_vector<float>(), x.to_vector<float>());
  // A pageable source with NonBlocking::yes falls back to a synchronous copy: same values.
  Tensor pageable = arange(0, 1000);
  EXPECT_EQ(pageable.to(Device::cuda(0), NonBlocking::yes).to(Device::cpu()).to_vector<float>(),
            pageable.to_vector<float>());
  // Strided pinned sources go through a contiguous copy first.
  Tensor strided = arange(0, 12).reshape({3, 4}).pin_memory().transpose(0, 1);
  EXPECT_EQ(strided.to(Device::cuda(0), NonBlocking::yes).to(Device::cpu()).to_vector<float>(),
            strided.to_vector<float>());
}

TEST(GpuCopy, PinnedBlocksAreReusedOnceTheirCopiesFinished) {
  RG_REQUIRE_GPU();
  void* first = nullptr;
  {
    Tensor x = zeros({4 * kMiB}).pin_memory();
    first = x.data_ptr();
    Tensor y = x.to(Device::cuda(0), NonBlocking::yes);
    synchronize(0);
  }
  Tensor again = ones({4 * kMiB}).pin_memory();
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_TRUE(again.is_pinned());
}

// A copy on one GPU is queued like a kernel: the host goes on while the stream is busy
// (BatchNorm's batch count is such a copy, every layer of every step), and the work after it
// on the stream sees the data.
TEST(GpuCopy, OnOneGpuTheHostDoesNotWait) {
  RG_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  Tensor src = full({kMiB}, 5.0, {DType::f32, gpu}), dst = empty({kMiB}, {DType::f32, gpu});
  {
    testing::StreamGate gate(current_stream(0));
    EXPECT_TRUE(gate.returns_while_closed([&] { copy_strided(dst, src); }))
        << "the host waited for the GPU in a copy between two tensors of one GPU";
  }
  EXPECT_EQ(dst.narrow(0, kMiB - 2, 2).to_vector<float>(), std::vector<float>(2, 5.0f));
}

TEST(GpuStream, EventsOrderWorkAcrossStreams) {
  RG_REQUIRE_GPU();
  Stream side(0);
  Tensor t;
  {
    StreamGuard use(0, side.get());
    t = full({64 * kMiB}, 3.0, {DType::f32, Device::cuda(0)});  // allocated and filled on `side`
  }
  Event filled(0);
  filled.record(side.get());
  filled.block(current_stream(0));  // the legacy stream waits for the fill; the host does not
  std::vector<float> back = t.narrow(0, 64 * kMiB - 4, 4).contiguous().to_vector<float>();
  EXPECT_EQ(back, std::vector<float>(4, 3.0f));
  filled.synchronize();
  EXPECT_TRUE(filled.query());
  side.synchronize();
  EXPECT_TRUE(side.query());
}

TEST(GpuStream, TimingEventsMeasureAndOthersRefuse) {
  RG_REQUIRE_GPU();
  Event start(0, EventTiming::enabled), stop(0, EventTiming::enabled);
  start.record(current_stream(0));
  Tensor t = full({16 * kMiB}, 1.0, {DType::f32, Device::cuda(0)});
  stop.record(current_stream(0));
  stop.synchronize();
  EXPECT_GE(start.elapsed_ms(stop), 0.0f);
  Event untimed(0);
  untimed.record(current_stream(0));
  untimed.synchronize();
  EXPECT_TRUE(throws_error([&] { untimed.elapsed_ms(stop); }, {"EventTiming::enabled"}));
}

// The timeline's device spans (core/trace.h, core/cuda/trace_timer.cpp): CUDA events recorded
// on the current stream, read only by trace::stop(), placed at host time on the stream's track.
TEST(GpuTrace, DeviceSpansAreTimedWithCudaEvents) {
  RG_REQUIRE_GPU();
  trace::start();
  const int64_t before = trace::now_ns();
  {
    trace::DeviceSpan span(Device::cuda(0), "fills");
    Tensor t = full({64 * kMiB}, 1.0, {DType::f32, Device::cuda(0)});
    for (int i = 0; i < 5; ++i) fill_(t, static_cast<double>(i));
  }
  trace::stop();  // waits for the GPU: after the span, never inside it
  const int64_t after = trace::now_ns();
  const trace::Recorded r = trace::take();
  const rg::testing::TraceCheck c =
      rg::testing::check_trace_json(trace::json_file({trace::to_json_objects(r, 0, "rank 0")}));
  ASSERT_TRUE(c.errors.empty()) << c.summary();
  const rg::testing::TraceEvent* e = c.find("fills");
  ASSERT_TRUE(e) << c.summary();
  EXPECT_EQ(e->cat, "device");
  EXPECT_EQ(c.thread_names.at({0, e->tid}).rfind("cuda:0 stream", 0), 0u);
  EXPECT_GT(e->dur, 10.0);  // 5 fills of 256 MB: well over 10 us
  const double origin = static_cast<double>(r.origin_ns) / 1000;
  EXPECT_GE(e->ts + origin, static_cast<double>(before) / 1000 - 1000);  // 1 ms of slack
  EXPECT_LE(e->end() + origin, static_cast<double>(after) / 1000 + 1000);
}

TEST(GpuStream, TensorsOutliveTheirStream) {
  RG_REQUIRE_GPU();
  Tensor t;
  ::testing::internal::CaptureStderr();
  {
    Stream side(0);
    StreamGuard use(0, side.get());
    t = full({kMiB}, 2.0, {DType::f32, Device::cuda(0)});
  }
  EXPECT_EQ(t.narrow(0, 0, 2).contiguous().to_vector<float>(), std::vector<float>(2, 2.0f));
  t = Tensor();  // freed on the legacy stream now, without a warning
  synchronize(0);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(GpuStream, RecordStreamDelaysTheFreeAfterTheOtherStream) {
  RG_REQUIRE_GPU();
  Stream side(0);
  ::testing::internal::CaptureStderr();
  Tensor t = empty({64 * kMiB}, {DType::f32, Device::cuda(0)});  // on the legacy stream
  Event allocated(0);
  allocated.record(current_stream(0));
  allocated.block(side.get());
  {
    StreamGuard use(0, side.get());
    fill_(t, 7.0);  // a write on `side`, which the free must wait for
  }
  record_stream(t, side.get());
  record_stream(t, side.get());  // recorded once
  t = Tensor();
  Tensor next = full({64 * kMiB}, 1.0, {DType::f32, Device::cuda(0)});
  EXPECT_EQ(next.narrow(0, 0, 4).contiguous().to_vector<float>(), std::vector<float>(4, 1.0f));
  synchronize(0);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  Tensor blob = from_blob(next.data_ptr(), {4}, {DType::f32, Device::cuda(0)}, [](void*) {});
  EXPECT_TRUE(throws_error([&] { record_stream(blob, side.get()); }, {"from_blob"}));
}

TEST(GpuAllocator, StatisticsAndReuse) {
  RG_REQUIRE_GPU();
  const Device dev = Device::cuda(0);
  empty_cache(dev);
  const MemoryStats base = memory_stats(dev);
  reset_peak_memory(dev);
  {
    Tensor t = empty({64 * kMiB / 4}, {DType::f32, dev});
    const MemoryStats s = memory_stats(dev);
    EXPECT_EQ(s.current_bytes, base.current_bytes + 64 * kMiB);
    EXPECT_GE(s.reserved_bytes, s.current_bytes);
    EXPECT_GE(s.peak_reserved_bytes, s.reserved_bytes);
  }
  synchronize(0);
  const MemoryStats freed = memory_stats(dev);
  EXPECT_EQ(freed.current_bytes, base.current_bytes);
  EXPECT_GE(freed.peak_bytes, base.current_bytes + 64 * kMiB);
  // The release threshold keeps the freed block reserved, and the next allocation reuses it.
  EXPECT_GE(freed.reserved_bytes, base.current_bytes + 64 * kMiB);
  {
    Tensor again = empty({64 * kMiB / 4}, {DType::f32, dev});
    EXPECT_EQ(memory_stats(dev).reserved_bytes, freed.reserved_bytes);
  }
  empty_cache(dev);
  EXPECT_LT(memory_stats(dev).reserved_bytes, freed.reserved_bytes);
  reset_peak_memory(dev);
  const MemoryStats reset = memory_stats(dev);
  EXPECT_EQ(reset.peak_bytes, reset.current_bytes);
  EXPECT_EQ(reset.peak_reserved_bytes, reset.reserved_bytes);
}

TEST(GpuAllocator, OutOfMemoryPrintsTheStatistics) {
  RG_REQUIRE_GPU();
  std::size_t free_bytes = 0, total_bytes = 0;
  RG_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const auto too_much = static_cast<int64_t>(total_bytes) * 2;
  EXPECT_TRUE(throws_error(
      [&] {
        empty({too_much}, {DType::u8, Device::cuda(0)});
      },
      {"cuda:0 out of memory: requested " + format_bytes(too_much), "in use by tensors",
       "reserved by the memory pool", "peak",
       "free of " + format_bytes(static_cast<int64_t>(total_bytes))}));
  // The failure left nothing behind: the next allocation works.
  EXPECT_EQ(zeros({4}, {DType::f32, Device::cuda(0)}).to_vector<float>(),
            std::vector<float>(4, 0.0f));
}

TEST(GpuCopy, BetweenTwoGpus) {
  RG_REQUIRE_GPU();
  if (cuda_device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  Tensor x = arange(0, 1000).to(Device::cuda(0));
  Tensor y = x.to(Device::cuda(1));
  EXPECT_EQ(y.device(), Device::cuda(1));
  EXPECT_EQ(y.to(Device::cpu()).to_vector<float>(), arange(0, 1000).to_vector<float>());
}

}  // namespace
}  // namespace rg::cuda
