#include "train/gpu_capability.h"

#include "core/config.h"

namespace rg::train {

// The CUDA build's query (gpu_capability_cuda.cpp).
int cuda_capability_of(int index);

int cuda_compute_capability(int index) {
  if (index < 0 || index >= cuda_device_count()) return 0;  // also "no driver", as no GPU
  if constexpr (kWithCuda) return cuda_capability_of(index);
  return 0;
}

}  // namespace rg::train
