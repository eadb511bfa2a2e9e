// Device memory through cudaMalloc, with the same accounting as the cpu allocator.
// A caching allocator (as PyTorch's) will replace this when GPU training lands.
#include <memory>
#include <mutex>
#include <vector>

#include "core/allocator.h"
#include "core/cuda/cuda_check.h"

namespace rg {
namespace {

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int index) : index_(index) {}
  void* allocate(std::size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    RG_CUDA_CHECK(cudaSetDevice(index_));
    void* ptr = nullptr;
    RG_CUDA_CHECK(cudaMalloc(&ptr, nbytes));
    record_allocation(Device::cuda(index_), static_cast<int64_t>(nbytes));
    return ptr;
  }
  void deallocate(void* ptr, std::size_t nbytes) override {
    if (!ptr) return;
    cudaSetDevice(index_);
    cudaFree(ptr);  // no throw from a destructor path; errors surface on the next checked call
    record_deallocation(Device::cuda(index_), static_cast<int64_t>(nbytes));
  }

 private:
  int index_;
};

}  // namespace

Allocator& cuda_allocator(int index) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<CudaAllocator>> allocators;
  std::lock_guard lock(mutex);
  if (static_cast<int>(allocators.size()) <= index) allocators.resize(index + 1);
  if (!allocators[index]) allocators[index] = std::make_unique<CudaAllocator>(index);
  return *allocators[index];
}

}  // namespace rg
