#pragma once
// Allocators hand out raw device memory and keep per-device accounting (current and peak
// bytes) that the training logs and benchmarks report.

#include <cstddef>
#include <cstdint>

#include "core/device.h"

namespace rg {

struct MemoryStats {
  int64_t current_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t allocations = 0;  // number of allocate() calls since start
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(std::size_t nbytes) = 0;
  virtual void deallocate(void* ptr, std::size_t nbytes) = 0;
};

// The allocator for a device: 64-byte-aligned host memory for cpu (a cache line and an
// AVX-512 register), the CUDA allocator for cuda:N.
Allocator& allocator_for(const Device& device);

MemoryStats memory_stats(const Device& device);
void reset_peak_memory(const Device& device);

// Called by allocators; public so that the CUDA allocator (compiled by nvcc) can report.
void record_allocation(const Device& device, int64_t nbytes);
void record_deallocation(const Device& device, int64_t nbytes);

}  // namespace rg
