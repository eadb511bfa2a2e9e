#pragma once
// What every allocator shares, below them all: the `Allocator` interface and the per-device
// accounting allocators report to (current, peak and count of the bytes handed to tensors).
// The allocators themselves — the CPU one and the choice of one per device (core/allocator.h),
// the CUDA ones (core/cuda/cuda_allocator.cpp, pinned_allocator.cpp) — stand above this file, so
// none of them needs another's code.

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

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(std::size_t nbytes) = 0;
  virtual void deallocate(void* ptr, std::size_t nbytes) = 0;
};

// Called by allocators for every block they hand out and take back.
void record_allocation(const Device& device, int64_t nbytes);
void record_deallocation(const Device& device, int64_t nbytes);
// What those calls counted on `device` (the reserved bytes, a pool's, left at 0), and a restart
// of its peak from the current value.
MemoryStats counted_memory(const Device& device);
void reset_counted_peak(const Device& device);

// "512 B", "1.50 MiB", "78.00 GiB": sizes in messages.
std::string format_bytes(int64_t bytes);

}  // namespace rg
