#pragma once
// What a GPU offers that a run's defaults depend on, asked without failing where there is none:
// the compute capability, and from it whether bf16 runs at full speed (Ampere, sm_80, and later:
// the tensor cores and cuDNN engines the presets' 16-bit default needs).

#include "core/device.h"

namespace rg::train {

// 10·major + minor of cuda:`index` (90 on an H100 or H200), or 0 where this build has no CUDA
// backend or the machine no such GPU (no driver included): never an error.
int cuda_compute_capability(int index);

// sm_80 and later.
inline bool has_fast_bf16(int compute_capability) {
  return compute_capability >= 80;
}

}  // namespace rg::train
