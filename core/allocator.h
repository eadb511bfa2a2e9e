#pragma once
// Allocators hand out raw device memory and keep per-device accounting (current and peak
// bytes) that the training logs and benchmarks report. The CUDA allocator
// (core/cuda/cuda_allocator.cpp) is stream-ordered: cudaMallocAsync on the device's memory
// pool, which keeps freed memory for reuse ("reserved") until empty_cache().

#include <cstdint>

#include "core/device.h"
#include "core/device_memory.h"  // Allocator, MemoryStats, the accounting, format_bytes

namespace rg {

// Host memory for cpu tensors: pageable (malloc), or pinned (page-locked, from cudaHostAlloc)
// so that copies to a GPU can run asynchronously.
enum class HostMemory : uint8_t { pageable, pinned };

// The allocator for a device: 64-byte-aligned host memory for cpu (a cache line and an
// AVX-512 register), the CUDA allocator for cuda:N.
Allocator& allocator_for(const Device& device);
// Pinned host memory, cached for reuse (counted as cpu memory). Needs a usable GPU.
Allocator& pinned_allocator();

MemoryStats memory_stats(const Device& device);
void reset_peak_memory(const Device& device);  // both peaks restart from the current values
// Returns the memory the CUDA pool keeps for reuse to the driver (after waiting for the
// device), so that other processes can have it; a no-op on the cpu.
void empty_cache(const Device& device);

}  // namespace rg
