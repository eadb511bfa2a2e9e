#include "core/storage.h"

#include "core/allocator.h"
#include "core/error.h"

namespace rg {

namespace {
Allocator& allocator_of(const Device& device, HostMemory host) {
  return host == HostMemory::pinned ? pinned_allocator() : allocator_for(device);
}
}  // namespace

Storage::Storage(std::size_t nbytes, Device device, HostMemory host)
    : impl_(std::make_shared<Impl>()) {
  RG_CHECK(host == HostMemory::pageable || device.is_cpu(),
           "Storage: only cpu memory can be pinned, got ", device);
  impl_->ptr = allocator_of(device, host).allocate(nbytes);
  impl_->nbytes = nbytes;
  impl_->device = device;
  impl_->host = host;
}

Storage Storage::wrap(void* ptr, std::size_t nbytes, Device device,
                      std::function<void(void*)> release) {
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->ptr = ptr;
  s.impl_->nbytes = nbytes;
  s.impl_->device = device;
  s.impl_->release = release ? std::move(release) : [](void*) {};
  return s;
}

Storage::Impl::~Impl() {
  if (release)
    release(ptr);
  else if (ptr)
    allocator_of(device, host).deallocate(ptr, nbytes);
}

}  // namespace rg
