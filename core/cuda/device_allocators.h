#pragma once
// The CUDA allocators as core/allocator.cpp reaches them: the device allocator per GPU and its
// pool's reserved bytes (cuda_allocator.cpp), the pinned host allocator (pinned_allocator.cpp).
// No CUDA header, so a CPU-only build includes it too: there core/allocator.cpp never calls
// these (its calls sit behind `if constexpr (kWithCuda)`), and nothing defines them.

#include <cstdint>

#include "core/device_memory.h"

namespace rg {

Allocator& cuda_allocator(int index);  // the stream-ordered allocator of cuda:index
// Bytes the pool of cuda:index holds from the driver (in use or cached), now and at its peak.
void cuda_reserved_memory(int index, int64_t* current, int64_t* peak);
void cuda_reset_peak_reserved(int index);
void cuda_empty_cache(int index);    // waits for the device, then returns cached memory
Allocator& cuda_pinned_allocator();  // cudaHostAlloc memory, cached

}  // namespace rg
