#include "core/allocator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "core/config.h"
#include "core/cuda/device_allocators.h"
#include "core/error.h"

namespace rg {

namespace {

// Freed large blocks kept for reuse, shared by every logical cpu device: they are all the same
// host memory, so a block freed by one replica may serve another.
class CpuBlockCache {
 public:
  static constexpr std::size_t kCacheLimit = std::size_t{4} << 30;  // bytes kept for reuse
  // A cached block of exactly `rounded` bytes, or null.
  void* take(std::size_t rounded) {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(rounded);
    if (it == cache_.end()) return nullptr;
    void* ptr = it->second;
    cache_.erase(it);
    cached_bytes_ -= rounded;
    return ptr;
  }
  // False when the cache is full (the caller frees the block).
  bool give(void* ptr, std::size_t rounded) {
    std::lock_guard lock(mutex_);
    if (cached_bytes_ + rounded > kCacheLimit) return false;
    cache_.emplace(rounded, ptr);
    cached_bytes_ += rounded;
    return true;
  }

 private:
  std::mutex mutex_;
  std::multimap<std::size_t, void*> cache_;  // exact rounded size -> free block
  std::size_t cached_bytes_ = 0;
};

// Large blocks are cached and reused instead of returned to the C library: glibc serves
// blocks over its mmap threshold (at most 32 MB) straight from the kernel, so every
// activation of a big layer would be page-faulted and zeroed again on each training step —
// measured at 2-4x slower for the 33 MB tensors of ResNet18's first stage at batch 128.
// One per logical cpu device: the same host memory and block cache, counted per device.
class CpuAllocator final : public Allocator {
 public:
  // 64 bytes: a cache line and one AVX-512 register, so vector loads never split lines.
  static constexpr std::size_t kAlignment = 64;
  static constexpr std::size_t kCachedFrom = std::size_t{1} << 20;  // smaller: plain malloc

  CpuAllocator(Device device, CpuBlockCache& cache) : device_(device), cache_(cache) {}

  void* allocate(std::size_t nbytes) override {
    const std::size_t rounded = round_up(nbytes);
    void* ptr = rounded >= kCachedFrom ? cache_.take(rounded) : nullptr;
    if (!ptr) ptr = std::aligned_alloc(kAlignment, rounded);
    RG_CHECK(ptr != nullptr, "cpu allocator: out of memory allocating ", nbytes, " bytes on ",
             device_, " (", memory_stats(device_).current_bytes, " bytes in use there)");
    record_allocation(device_, static_cast<int64_t>(nbytes));
    return ptr;
  }

  void deallocate(void* ptr, std::size_t nbytes) override {
    record_deallocation(device_, static_cast<int64_t>(nbytes));
    const std::size_t rounded = round_up(nbytes);
    if (rounded >= kCachedFrom && cache_.give(ptr, rounded)) return;
    std::free(ptr);
  }

 private:
  // Sizes >= 1 MB round up to 64 KB steps, so slightly different shapes share blocks.
  static std::size_t round_up(std::size_t nbytes) {
    const std::size_t step = nbytes >= kCachedFrom ? std::size_t{1} << 16 : kAlignment;
    return std::max<std::size_t>(step, (nbytes + step - 1) / step * step);
  }

  Device device_;
  CpuBlockCache& cache_;
};

}  // namespace

Allocator& allocator_for(const Device& device) {
  // Never destroyed: threads that outlive main() (MPI's communication thread, the pool's
  // workers) may still free tensors while static objects are being destroyed at exit. The
  // cached blocks go back to the system with the process.
  static CpuBlockCache& cache = *new CpuBlockCache;
  static const auto cpus = [] {
    std::array<CpuAllocator*, kMaxCpuDevices> all;
    for (int i = 0; i < kMaxCpuDevices; ++i) all[i] = new CpuAllocator(Device::cpu(i), cache);
    return all;
  }();
  if (device.is_cpu()) {
    check_device_available(device);  // the index range
    return *cpus[device.index];
  }
  if constexpr (kWithCuda) {
    check_device_available(device);
    return cuda_allocator(device.index);
  } else {
    check_device_available(device);  // throws: no CUDA backend
    return *cpus[0];
  }
}

Allocator& pinned_allocator() {
  if constexpr (kWithCuda) {
    check_device_available(Device::cuda(0));
    return cuda_pinned_allocator();
  } else {
    check_device_available(Device::cuda(0));  // throws: no CUDA backend
    return allocator_for(Device::cpu());
  }
}

MemoryStats memory_stats(const Device& device) {
  MemoryStats stats = counted_memory(device);
  if constexpr (kWithCuda) {
    if (device.is_cuda())
      cuda_reserved_memory(device.index, &stats.reserved_bytes, &stats.peak_reserved_bytes);
  }
  return stats;
}

void reset_peak_memory(const Device& device) {
  reset_counted_peak(device);
  if constexpr (kWithCuda) {
    if (device.is_cuda()) cuda_reset_peak_reserved(device.index);
  }
}

void empty_cache(const Device& device) {
  if (device.is_cpu()) return;
  check_device_available(device);
  if constexpr (kWithCuda) cuda_empty_cache(device.index);
}

}  // namespace rg
