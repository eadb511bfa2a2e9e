#include "core/storage.h"

#include "core/allocator.h"

namespace rg {

Storage::Storage(std::size_t nbytes, Device device) : impl_(std::make_shared<Impl>()) {
  impl_->ptr = allocator_for(device).allocate(nbytes);
  impl_->nbytes = nbytes;
  impl_->device = device;
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
    allocator_for(device).deallocate(ptr, nbytes);
}

}  // namespace rg
