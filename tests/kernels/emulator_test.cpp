// The kernel emulator itself: each CUDA feature it claims runs a small kernel whose answer is
// known, and each misuse it claims to catch gives an rg::Error instead of a hang.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/cuda/kernel.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using testing::throws_error;

__global__ void iota_kernel(int* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = i;
}

TEST(Emulator, GridStrideLoopVisitsEveryIndexOnce) {
  std::vector<int> out(1000, -1);
  cuda::launch(iota_kernel, dim3(3), dim3(64), 0, nullptr, out.data(), 1000);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(out[i], i);
}

// Every launch counts once (core/launch_counts.h: what bench_train --count-launches reports),
// however many blocks and threads it runs; nothing else on the launch path counts.
TEST(Emulator, EachLaunchCountsOnce) {
  std::vector<int> out(1000, -1);
  const LaunchCounts before = launch_counts();
  cuda::launch(iota_kernel, dim3(3), dim3(64), 0, nullptr, out.data(), 1000);
  cuda::launch(iota_kernel, dim3(1), dim3(32), 0, nullptr, out.data(), 10);
  const LaunchCounts launched = launch_counts() - before;
  EXPECT_EQ(launched.kernels, 2);
  EXPECT_EQ(launched.library_calls, 0);
  EXPECT_EQ(launched.copies, 0);
  count_launch(Launch::library_call);
  count_launch(Launch::copy);
  const LaunchCounts all = launch_counts() - before;
  EXPECT_EQ(all.kernels, 2);
  EXPECT_EQ(all.library_calls, 1);
  EXPECT_EQ(all.copies, 1);
}

__global__ void index_kernel(int* out) {
  const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  out[b * blockDim.x * blockDim.y * blockDim.z + t] =
      1000 * (blockIdx.z * 100 + blockIdx.y * 10 + blockIdx.x) + threadIdx.z * 100 +
      threadIdx.y * 10 + threadIdx.x;
}

TEST(Emulator, ThreeDimensionalIndices) {
  const dim3 grid(2, 3, 2), block(4, 3, 2);
  std::vector<int> out(12 * 24, -1);
  cuda::launch(index_kernel, grid, block, 0, nullptr, out.data());
  int k = 0;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 3; ++by)
      for (unsigned bx = 0; bx < 2; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx)
              ASSERT_EQ(out[k++], 1000 * (bz * 100 + by * 10 + bx) + tz * 100 + ty * 10 + tx);
}

// The classic shared-memory tree: every step reads what other threads wrote in the step before,
// so it is only right if __syncthreads really is a barrier.
__global__ void block_sum_kernel(const float* in, float* out, int n) {
  __shared__ float partial[128];
  float v = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    v += in[i];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

TEST(Emulator, SharedMemoryTreeReduction) {
  std::vector<float> in(5000);
  std::iota(in.begin(), in.end(), 0.0f);
  std::vector<float> out(3, 0);
  cuda::launch(block_sum_kernel, dim3(3), dim3(128), 0, nullptr, in.data(), out.data(), 5000);
  EXPECT_EQ(out[0] + out[1] + out[2], 5000.0f * 4999.0f / 2);
}

__global__ void warp_sum_kernel(const int* in, int* out) {
  int v = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = v;
}

TEST(Emulator, WarpShuffleReduction) {
  std::vector<int> in(64);
  std::iota(in.begin(), in.end(), 1);
  std::vector<int> out(2);
  cuda::launch(warp_sum_kernel, dim3(1), dim3(64), 0, nullptr, in.data(), out.data());
  EXPECT_EQ(out[0], 32 * 33 / 2);
  EXPECT_EQ(out[1], 64 * 65 / 2 - 32 * 33 / 2);
}

__global__ void shuffle_kinds_kernel(int* out) {
  const int lane = threadIdx.x;
  out[lane] = __shfl_sync(0xffffffffu, lane * 10, 3);
  out[32 + lane] = __shfl_up_sync(0xffffffffu, lane, 2);
  out[64 + lane] = __shfl_xor_sync(0xffffffffu, lane, 1);
  out[96 + lane] = __shfl_down_sync(0xffffffffu, lane, 1, 8);  // segments of 8 lanes
}

TEST(Emulator, ShuffleVariantsAndWidth) {
  std::vector<int> out(128);
  cuda::launch(shuffle_kinds_kernel, dim3(1), dim3(32), 0, nullptr, out.data());
  for (int lane = 0; lane < 32; ++lane) {
    EXPECT_EQ(out[lane], 30);
    EXPECT_EQ(out[32 + lane], lane < 2 ? lane : lane - 2);
    EXPECT_EQ(out[64 + lane], lane ^ 1);
    EXPECT_EQ(out[96 + lane], lane % 8 == 7 ? lane : lane + 1);
  }
}

__global__ void vote_kernel(unsigned* out) {
  const int lane = threadIdx.x;
  const unsigned ballot = __ballot_sync(0xffffffffu, lane % 3 == 0);
  const unsigned all = __all_sync(0xffffffffu, lane < 32);
  const unsigned any = __any_sync(0xffffffffu, lane == 17);
  const unsigned not_all = __all_sync(0xffffffffu, lane < 31);
  if (lane == 0) {  // one writer: 32 lanes storing the same value is still a race
    out[0] = ballot;
    out[1] = all;
    out[2] = any;
    out[3] = not_all;
  }
}

TEST(Emulator, Votes) {
  std::vector<unsigned> out(4);
  cuda::launch(vote_kernel, dim3(1), dim3(32), 0, nullptr, out.data());
  unsigned expected = 0;
  for (int lane = 0; lane < 32; lane += 3) expected |= 1u << lane;
  EXPECT_EQ(out[0], expected);
  EXPECT_EQ(out[1], 1u);
  EXPECT_EQ(out[2], 1u);
  EXPECT_EQ(out[3], 0u);
}

__global__ void histogram_kernel(const int* in, int n, int* bins, float* total) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    atomicAdd(&bins[in[i] % 4], 1);
    atomicAdd(total, 0.5f);
  }
}

TEST(Emulator, Atomics) {
  std::vector<int> in(999);
  std::iota(in.begin(), in.end(), 0);
  std::vector<int> bins(4, 0);
  float total = 0;
  cuda::launch(histogram_kernel, dim3(2), dim3(96), 0, nullptr, in.data(), 999, bins.data(),
               &total);
  EXPECT_EQ(bins, (std::vector<int>{250, 250, 250, 249}));
  EXPECT_EQ(total, 499.5f);
}

__global__ void dynamic_shared_kernel(double* out) {
  RG_DYNAMIC_SHARED(double, buffer);
  buffer[blockDim.x - 1 - threadIdx.x] = threadIdx.x + 100.0 * blockIdx.x;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = buffer[threadIdx.x];
}

TEST(Emulator, DynamicSharedMemoryPerBlock) {
  std::vector<double> out(2 * 48);
  cuda::launch(dynamic_shared_kernel, dim3(2), dim3(48), 48 * sizeof(double), nullptr, out.data());
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 48; ++t) EXPECT_EQ(out[b * 48 + t], 47 - t + 100.0 * b);
}

__global__ void read_unwritten_shared_kernel(float* out) {
  RG_DYNAMIC_SHARED(float, buffer);
  out[threadIdx.x] = buffer[threadIdx.x];
}

TEST(Emulator, UnwrittenDynamicSharedMemoryReadsAsNaN) {
  std::vector<float> out(8, 0);
  cuda::launch(read_unwritten_shared_kernel, dim3(1), dim3(8), 8 * sizeof(float), nullptr,
               out.data());
  for (float v : out) EXPECT_TRUE(v != v);
}

// Threads that return early count as arrived at later barriers, as exited threads do on the GPU.
__global__ void early_return_kernel(int* out, int n) {
  __shared__ int count;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  if (static_cast<int>(threadIdx.x) >= n) return;
  atomicAdd(&count, 1);
  __syncthreads();
  out[threadIdx.x] = count;
}

TEST(Emulator, ReturnedThreadsDoNotBlockBarriers) {
  std::vector<int> out(64, -1);
  cuda::launch(early_return_kernel, dim3(1), dim3(64), 0, nullptr, out.data(), 40);
  for (int t = 0; t < 40; ++t) EXPECT_EQ(out[t], 40);
  EXPECT_EQ(out[40], -1);
}

__global__ void divergent_barrier_kernel() {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncwarp();
  }
}

__global__ void partial_mask_kernel(int* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_down_sync(0xffffu, 1, 1);
}

__global__ void throwing_kernel(int n) {
  if (static_cast<int>(threadIdx.x) == n) fail("thread ", n, " gave up");
  __syncthreads();
}

TEST(Emulator, MisuseIsAnErrorNotAHang) {
  EXPECT_TRUE(
      throws_error([] { cuda::launch(divergent_barrier_kernel, dim3(1), dim3(32), 0, nullptr); },
                   {"deadlock", "different barriers"}));
  std::vector<int> out(32);
  EXPECT_TRUE(throws_error(
      [&] { cuda::launch(partial_mask_kernel, dim3(1), dim3(32), 0, nullptr, out.data()); },
      {"full-mask"}));
  EXPECT_TRUE(throws_error([] { cuda::launch(throwing_kernel, dim3(2), dim3(64), 0, nullptr, 5); },
                           {"thread 5 gave up"}));
  EXPECT_TRUE(
      throws_error([] { cuda::launch(throwing_kernel, dim3(1), dim3(2048), 0, nullptr, 0); },
                   {"invalid block", "1024"}));
  EXPECT_TRUE(
      throws_error([] { cuda::launch(throwing_kernel, dim3(1), dim3(32), 64 * 1024, nullptr, 99); },
                   {"65536 bytes of dynamic shared memory"}));
}

}  // namespace
}  // namespace rg
