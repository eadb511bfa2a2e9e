// cuda_compute_capability's query on a CUDA build (gpu_capability.cpp).
#include <cuda_runtime.h>

#include "core/cuda/cuda_check.h"

namespace rg::train {

int cuda_capability_of(int index) {
  int major = 0, minor = 0;
  RG_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index));
  RG_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index));
  return 10 * major + minor;
}

}  // namespace rg::train
