#pragma once
// Allocators hand out raw device memory and keep per-device accounting (current and peak
// bytes) that the training logs and benchmarks report. The CUDA allocator
// (core/cuda/cuda_allocator.cpp) is stream-ordered: cudaMallocAsync on the device's memory
// pool, which keeps freed memory for reuse ("reserved") until empty_cache().

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/device.h"

namespace rg {

struct MemoryStats {
  int64_t current_bytes = 0;  // in use by tensors
  int64_t peak_bytes = 0;
  int64_t allocations = 0;  // number of allocate() calls since start
  // Held by the CUDA memory pool: in use plus freed-and-kept for reuse. 0 on the cpu.
  int64_t reserved_bytes = 0;
  int64_t peak_reserved_bytes = 0;
};

// Host memory for cpu tensors: pageable (malloc), or pinned (page-locked, from cudaHostAlloc)
// so that copies to a GPU can run asynchronously.
enum class HostMemory : uint8_t { pageable, pinned };

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(std::size_t nbytes) = 0;
  virtual void deallocate(void* ptr, std::size_t nbytes) = 0;
};

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
// "512 B", "1.50 MiB", "78.00 GiB": sizes in messages.
std::string format_bytes(int64_t bytes);

// Called by allocators; public so that the CUDA allocator (compiled by nvcc) can report.
void record_allocation(const Device& device, int64_t nbytes);
void record_deallocation(const Device& device, int64_t nbytes);

}  // namespace rg
