#include "core/storage.h"

#include "core/allocator.h"

namespace rg {

Storage::Storage(std::size_t nbytes, Device device) : impl_(std::make_shared<Impl>()) {
  impl_->ptr = allocator_for(device).allocate(nbytes);
  impl_->nbytes = nbytes;
  impl_->device = device;
}

Storage::Impl::~Impl() {
  if (ptr) allocator_for(device).deallocate(ptr, nbytes);
}

}  // namespace rg
