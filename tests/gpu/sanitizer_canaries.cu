// Kernels wrong on purpose, for the racecheck and synccheck steps of scripts/gpu_quick_check.sh:
// each tool must report its canary, or its clean run over the real kernels proves nothing (as
// kernels.tsan_catches_missing_syncthreads does for ThreadSanitizer over the emulator).
//
//   gpu_sanitizer_canaries race        thread 0 writes shared memory that the other warps read
//                                      with no __syncthreads between: a read-after-write hazard
//   gpu_sanitizer_canaries divergent   a __syncthreads that only the first warp reaches (the
//                                      pattern of the synccheck documentation's example)
//
// Exits 0 when the kernel ran (the tool's report is what counts), 2 on a usage error, 77
// without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

namespace {

constexpr int kThreads = 256;  // 8 warps: the readers sit in other warps than the writer

__global__ void missing_syncthreads(int* out) {
  __shared__ int value;
  if (threadIdx.x == 0) value = 42;
  // The missing barrier: warps 1-7 may read before warp 0 has written.
  out[threadIdx.x] = value;
}

__global__ void divergent_barrier(int* out) {
  __shared__ int values[kThreads];
  values[threadIdx.x] = static_cast<int>(threadIdx.x);
  if (threadIdx.x < 32) {
    __syncthreads();  // reached by the first warp only; the others have left the kernel
    out[threadIdx.x] = values[(threadIdx.x + 1) % 32];
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool race = argc == 2 && std::strcmp(argv[1], "race") == 0;
  const bool divergent = argc == 2 && std::strcmp(argv[1], "divergent") == 0;
  if (!race && !divergent) {
    std::fprintf(stderr, "usage: gpu_sanitizer_canaries race|divergent\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("gpu_sanitizer_canaries: no GPU, nothing to run\n");
    return 77;
  }
  int* out = nullptr;
  if (cudaMalloc(&out, kThreads * sizeof(int)) != cudaSuccess) return 1;
  if (race)
    missing_syncthreads<<<1, kThreads>>>(out);
  else
    divergent_barrier<<<1, kThreads>>>(out);
  const cudaError_t err = cudaDeviceSynchronize();
  std::printf("gpu_sanitizer_canaries: %s kernel ran: %s\n", argv[1], cudaGetErrorString(err));
  cudaFree(out);
  return 0;
}
