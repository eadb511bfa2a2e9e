// Kernels wrong on purpose, for the racecheck and synccheck steps of scripts/gpu_quick_check.sh:
// each tool must report its canary, or its clean run over the real kernels proves nothing (as
// kernels.tsan_catches_missing_syncthreads does for ThreadSanitizer over the emulator).
//
//   gpu_sanitizer_canaries race        each thread writes its slot of shared memory and reads
//                                      the slot of the thread one warp on, with no __syncthreads
//                                      between: read-after-write hazards across warps
//   gpu_sanitizer_canaries syncwarp    every thread of a warp calls __syncwarp with a mask that
//                                      leaves out half of them ("Invalid arguments")
//
// The data and the mask come from global memory and the kernels' arguments: with constants the
// compiler may fold the accesses away — a first version stored 42 into a __shared__ int and NVVM
// turned every load of it into 42, leaving racecheck no shared access to see. Check the SASS
// with `cuobjdump -sass build/tests/gpu_sanitizer_canaries` (not in this machine's toolkit; PyPI's
// nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm have it): STS then LDS with no BAR between in
// missing_syncthreads; in bad_syncwarp_mask, between its STS and LDS, the NOP that __syncwarp
// compiles to on sm_90, which synccheck instruments (its report points at that offset).
//
// What synccheck does not report on Hopper: a __syncthreads that part of a block skips. The
// pattern of the synccheck documentation's example (a barrier in a loop whose last pass only part
// of a warp enters) and whole warps leaving before a barrier both ran clean under synccheck on an
// H200 (compute-sanitizer 2025.3.1): since Volta a barrier waits for the threads that have not
// exited, and the skipped barrier compiles to a predicated BAR.SYNC. The emulator
// (core/cuda/emulator.h) counts a returned thread as arrived too, so no tool of ours flags such
// a barrier: keep __syncthreads out of conditions that differ within a block.
//
// Exits 0 when the kernel ran (the tool's report is what counts), 2 on a usage error, 77
// without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr int kThreads = 256;         // 8 warps: the race crosses warps
constexpr int kSyncwarpThreads = 64;  // 2 warps
constexpr unsigned kHalfWarp = 0x0000ffffu;

__global__ void missing_syncthreads(const int* in, int* out) {
  __shared__ int values[kThreads];
  values[threadIdx.x] = in[threadIdx.x];
  // The missing __syncthreads(): warp w reads what warp w+1 may not have written yet.
  out[threadIdx.x] = values[(threadIdx.x + 32) % kThreads];
}

// Lanes 16-31 call __syncwarp with a mask that does not name them: undefined behaviour, which
// synccheck reports as "Barrier error detected. Invalid arguments." (lanes 0-15 still meet, so
// the kernel ends even without the tool).
__global__ void bad_syncwarp_mask(const int* in, int* out, unsigned mask) {
  __shared__ int values[kSyncwarpThreads];
  values[threadIdx.x] = in[threadIdx.x];
  __syncwarp(mask);
  out[threadIdx.x] = values[threadIdx.x ^ 1];
}

}  // namespace

int main(int argc, char** argv) {
  const bool race = argc == 2 && std::strcmp(argv[1], "race") == 0;
  const bool syncwarp = argc == 2 && std::strcmp(argv[1], "syncwarp") == 0;
  if (!race && !syncwarp) {
    std::fprintf(stderr, "usage: gpu_sanitizer_canaries race|syncwarp\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("gpu_sanitizer_canaries: no GPU, nothing to run\n");
    return 77;
  }
  // Distinct non-zero values: a write of the value already there may count as harmless.
  std::vector<int> host(kThreads);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int>(i) + 1;
  int* in = nullptr;
  int* out = nullptr;
  if (cudaMalloc(&in, host.size() * sizeof(int)) != cudaSuccess ||
      cudaMalloc(&out, host.size() * sizeof(int)) != cudaSuccess ||
      cudaMemcpy(in, host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice) !=
          cudaSuccess) {
    std::fprintf(stderr, "gpu_sanitizer_canaries: cannot set up the inputs\n");
    return 1;
  }
  if (race)
    missing_syncthreads<<<1, kThreads>>>(in, out);
  else
    bad_syncwarp_mask<<<1, kSyncwarpThreads>>>(in, out, kHalfWarp);
  // Under synccheck the invalid __syncwarp also ends the kernel with a launch failure.
  const cudaError_t err = cudaDeviceSynchronize();
  std::printf("gpu_sanitizer_canaries: %s kernel ran: %s\n", argv[1], cudaGetErrorString(err));
  cudaFree(out);
  cudaFree(in);
  return 0;
}
