#pragma once
// What a kernel header (`ops/<op>/<op>_kernels.cuh`) includes: the CUDA vocabulary and one way
// to launch. nvcc builds the kernels for the GPU; the host compiler builds the very same source
// against the emulator (core/cuda/emulator.h), which runs it on CPU threads for the tests.
//
//   rg::cuda::launch(kernel, grid, block, shared_bytes, stream, args...);
//
// launches `kernel<<<grid, block, shared_bytes, stream>>>(args...)` and checks the launch. Kernel
// headers write dynamic shared memory as RG_DYNAMIC_SHARED(T, name), never `extern __shared__`.

#include <cstddef>
#include <cstdint>
#include <utility>

#if defined(__CUDACC__)
#include <cuda_runtime.h>

#include "core/cuda/cuda_check.h"
#define RG_DYNAMIC_SHARED(T, name)                                  \
  extern __shared__ __align__(16) unsigned char rg_dynamic_smem_[]; \
  T* name = reinterpret_cast<T*>(rg_dynamic_smem_)
#else
#include "core/cuda/emulator.h"
#endif

namespace rg::cuda {

// Threads per block of the one-dimensional kernels: a multiple of the warp, enough to hide
// latency, small enough for several blocks per SM.
inline constexpr int kBlockThreads = 256;

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

template <class... KernelArgs, class... Args>
void launch(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, std::size_t shared_bytes,
            cudaStream_t stream, Args&&... args) {
#if defined(__CUDACC__)
  kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Args>(args)...);
  RG_CUDA_CHECK(cudaGetLastError());
#else
  (void)stream;  // the emulator runs launches one after another, in issue order
  ::rg::emu::launch(grid, block, shared_bytes, [&] { kernel(KernelArgs(args)...); });
#endif
}

}  // namespace rg::cuda
