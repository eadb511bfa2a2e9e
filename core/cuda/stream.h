#pragma once
// Streams and the device guard, as kernel launchers use them. (A minimal first version: the
// runtime issue extends it with per-thread current streams, events and RAII streams.)

#include <cuda_runtime.h>

#include "core/cuda/cuda_check.h"

namespace rg::cuda {

// The stream kernels of `device` are launched on by the calling thread: the per-thread
// default stream, so that host threads (DataParallel) do not serialise on the legacy stream.
inline cudaStream_t current_stream(int /*device*/) {
  return cudaStreamPerThread;
}

// Makes `device` current for a scope and restores the previous device after it.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    RG_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) RG_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace rg::cuda
