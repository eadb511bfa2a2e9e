#pragma once
// Storage: one reference-counted block of device memory. Tensors are views onto a Storage;
// copying a Tensor handle never copies data.

#include <cstddef>
#include <functional>
#include <memory>

#include "core/allocator.h"
#include "core/device.h"

namespace rg {

class Storage {
 public:
  Storage() = default;
  // Allocates nbytes on device (uninitialised); HostMemory::pinned (cpu only) takes
  // page-locked memory from pinned_allocator().
  Storage(std::size_t nbytes, Device device, HostMemory host = HostMemory::pageable);
  // Wraps memory owned elsewhere (a buffer from another library, a test double); `release`
  // runs when the last tensor using it goes away. The memory is not counted in memory_stats.
  static Storage wrap(void* ptr, std::size_t nbytes, Device device,
                      std::function<void(void*)> release);

  void* data() const { return impl_ ? impl_->ptr : nullptr; }
  std::size_t nbytes() const { return impl_ ? impl_->nbytes : 0; }
  Device device() const { return impl_ ? impl_->device : Device::cpu(); }
  bool defined() const { return impl_ != nullptr; }
  bool is_pinned() const { return impl_ && impl_->host == HostMemory::pinned; }
  bool same_as(const Storage& other) const { return impl_ == other.impl_; }
  // Made by wrap(): the memory belongs to someone else, not to ringgrad's allocators.
  bool wraps_foreign_memory() const { return impl_ && impl_->release; }
  // How many Storage handles share this memory (0 when undefined). 1 means no other tensor
  // or view can observe an in-place update through this storage.
  long use_count() const { return impl_.use_count(); }

 private:
  struct Impl {
    void* ptr = nullptr;
    std::size_t nbytes = 0;
    Device device;
    HostMemory host = HostMemory::pageable;
    std::function<void(void*)> release;  // set for wrapped memory
    ~Impl();
  };
  std::shared_ptr<Impl> impl_;
};

}  // namespace rg
