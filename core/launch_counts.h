#pragma once
// What a GPU step costs in launches, counted where the work is issued: kernels (every
// cuda::launch of a kernel of ours, on a GPU or through the kernel emulator), library calls that
// run work (cuDNN's cudnnBackendExecute, cuBLAS's GEMMs: each may launch kernels of its own,
// which are not counted) and memory copies on a device's stream (cudaMemcpyAsync). Process-wide,
// from every thread; `bench_train --count-launches` prints them per training step.

#include <cstdint>

namespace rg {

struct LaunchCounts {
  int64_t kernels = 0, library_calls = 0, copies = 0;
};

// The counts since the process started.
LaunchCounts launch_counts();
// The difference of two readings: what ran between them.
LaunchCounts operator-(const LaunchCounts& after, const LaunchCounts& before);

// Called by the launch paths (core/cuda/kernel.h, ops/conv/cudnn, ops/matmul, core/cuda/).
enum class Launch { kernel, library_call, copy };
void count_launch(Launch kind);

}  // namespace rg
