// GPU discovery and waiting for a GPU. Compiled only into CUDA builds.
#include <cuda_runtime.h>

#include "core/cuda/stream.h"

namespace rg {

int cuda_runtime_device_count() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  // No driver (cudaErrorInsufficientDriver on the build machines) or no device means "no GPU",
  // not a crash: callers refuse cuda devices with a clear message.
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error state
    return 0;
  }
  return count;
}

void cuda_runtime_synchronize(int device) {
  cuda::synchronize(device);
}

}  // namespace rg
