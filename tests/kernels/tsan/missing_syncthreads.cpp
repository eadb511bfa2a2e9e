// A kernel with its __syncthreads removed, for ThreadSanitizer to catch: each thread writes its
// slot of shared memory and thread 0 sums the slots without waiting for the others. On a GPU it
// usually gives the right answer, which is what makes the bug dangerous; under the emulator the
// threads are OS threads, and TSan reports the unordered write and read as a data race.
// scripts/tsan_kernels.sh runs it and requires that report: proof that the TSan run of the
// emulated kernels would notice a missing barrier.
#include <cstdio>
#include <vector>

#include "core/cuda/kernel.h"

namespace {

__global__ void racy_block_sum(const float* in, float* out) {
  __shared__ float slots[64];
  slots[threadIdx.x] = in[threadIdx.x];
  // __syncthreads();  <- missing
  if (threadIdx.x == 0) {
    float total = 0;
    for (unsigned i = 0; i < blockDim.x; ++i) total += slots[i];
    *out = total;
  }
}

}  // namespace

int main() {
  std::vector<float> in(64, 1.0f);
  float out = 0;
  rg::cuda::launch(racy_block_sum, dim3(1), dim3(64), 0, nullptr, in.data(), &out);
  std::printf("racy block sum: %g (64 when the race happens to go well)\n", out);
  return 0;
}
