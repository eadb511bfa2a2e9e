#pragma once
// What a kernel header (`ops/<op>/<op>_kernels.cuh`) includes: the CUDA vocabulary and one way
// to launch. nvcc builds the kernels for the GPU; the host compiler builds the very same source
// against the emulator (core/cuda/emulator.h), which runs it on CPU threads for the tests.
//
//   rg::cuda::launch(kernel, grid, block, shared_bytes, stream, args...);
//
// launches `kernel<<<grid, block, shared_bytes, stream>>>(args...)` and checks the launch. Kernel
// headers write dynamic shared memory as RG_DYNAMIC_SHARED(T, name), never `extern __shared__`.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/launch_counts.h"
#include "core/macros.h"

#if defined(__CUDACC__)
#include <cuda_runtime.h>

#include "core/cuda/cuda_check.h"
#define RG_DYNAMIC_SHARED(T, name)                                  \
  extern __shared__ __align__(16) unsigned char rg_dynamic_smem_[]; \
  T* name = reinterpret_cast<T*>(rg_dynamic_smem_)
#else
#include "core/cuda/emulator.h"
#endif

// Every kernel header wraps its kernels and launchers in `inline namespace RG_KERNEL_BUILD`,
// which differs between nvcc and the emulator: a test binary links the library's nvcc-built
// launchers beside its own emulated ones, and without distinct names the two inline definitions
// of one function (or a kernel and its nvcc host stub) would be one symbol to the linker, which
// keeps either — an ODR violation that could run a real launch in an emulator test.
#if defined(__CUDACC__)
#define RG_KERNEL_BUILD device_build
#else
#define RG_KERNEL_BUILD emulated_build
#endif

namespace rg::cuda {

// Threads per block of the one-dimensional kernels: a multiple of the warp, enough to hide
// latency, small enough for several blocks per SM.
// Emulated, each CUDA thread is an OS thread: blocks of two warps still exercise every
// cross-warp step, at a quarter of the thread start-ups.
#if defined(__CUDACC__)
inline constexpr int kBlockThreads = 256;
#else
inline constexpr int kBlockThreads = 64;
#endif

// Blocks for a grid-stride loop over n elements: enough to fill the GPU (the largest has 132
// SMs × 2048 threads), capped so that each thread does a few elements. The emulator gets few
// blocks: its threads are OS threads.
inline unsigned grid_for(int64_t n, int threads = kBlockThreads) {
#if defined(__CUDACC__)
  const int64_t cap = 132 * 2048 / threads * 4;
#else
  const int64_t cap = 4;
#endif
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks < cap ? blocks : cap));
}

// Blocks for a kernel that gives each of `lanes` lanes a block, grid-stride over the lanes: the
// grid's limit on the GPU; a few blocks emulated, which still exercise the lane loop.
inline unsigned lane_blocks(int64_t lanes) {
#if defined(__CUDACC__)
  const int64_t cap = 65535;
#else
  const int64_t cap = 3;
#endif
  return static_cast<unsigned>(lanes < 1 ? 1 : (lanes < cap ? lanes : cap));
}

// Kernels over tensors of at most this many dims take their strides by value.
inline constexpr int kMaxDims = 8;

// K operands walked together over one shape: element i (row-major over `sizes`) of operand k is
// at offset Σ_d coord_d · strides[k][d].
template <int K>
struct StridedGeometry {
  int dims = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[K][kMaxDims] = {};
};

template <int K>
RG_HOST_DEVICE inline void strided_offsets(int64_t i, const StridedGeometry<K>& g,
                                           int64_t (&offset)[K]) {
  for (int k = 0; k < K; ++k) offset[k] = 0;
  for (int d = g.dims - 1; d >= 0; --d) {
    const int64_t coord = i % g.sizes[d];
    i /= g.sizes[d];
    for (int k = 0; k < K; ++k) offset[k] += coord * g.strides[k][d];
  }
}

// The geometry of `shape` with operand k's strides in strides[k]; names `op` when the shape has
// more dims than kernels take.
template <int K>
StridedGeometry<K> strided_geometry(std::string_view op, const std::vector<int64_t>& shape,
                                    const std::array<std::vector<int64_t>, K>& strides) {
  RG_CHECK(shape.size() <= static_cast<std::size_t>(kMaxDims), op, ": CUDA kernels take at most ",
           kMaxDims, " dims for strided or broadcast operands, got ", shape.size());
  StridedGeometry<K> g;
  g.dims = static_cast<int>(shape.size());
  for (int d = 0; d < g.dims; ++d) {
    g.sizes[d] = shape[d];
    for (int k = 0; k < K; ++k) g.strides[k][d] = strides[k][d];
  }
  return g;
}

template <class... KernelArgs, class... Args>
void launch(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, std::size_t shared_bytes,
            cudaStream_t stream, Args&&... args) {
  count_launch(Launch::kernel);
#if defined(__CUDACC__)
  kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Args>(args)...);
  RG_CUDA_CHECK(cudaGetLastError());
#else
  (void)stream;  // the emulator runs launches one after another, in issue order
  ::rg::emu::launch(grid, block, shared_bytes, [&] { kernel(KernelArgs(args)...); });
#endif
}

}  // namespace rg::cuda
