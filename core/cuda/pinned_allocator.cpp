// Pinned (page-locked) host memory for asynchronous copies to a GPU, cached for reuse.
//
// cudaHostAlloc pins pages in the kernel and takes milliseconds, and cudaFreeHost waits for
// the device: a DataLoader that pinned every batch afresh would spend its time there. Blocks
// are therefore kept, by size rounded up to a power of two, and handed out again. A freed
// block may still be the source of a copy in flight (Tensor::to(device, NonBlocking::yes)
// returns before the copy ran), so each copy records an event on its stream against the
// block, and a block is reused only when all its events have completed (PyTorch's
// CachingHostAllocator works the same way). A copy captured into a CUDA graph reads its block
// again at every launch: such a block is held, unchanged, until the graph is destroyed
// (core/cuda/graph.h). The cache is never trimmed.
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "core/cuda/cuda_allocator.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/device_allocators.h"

namespace rg {
namespace {

class PinnedAllocator final : public Allocator {
 public:
  void* allocate(std::size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const std::size_t size = round_up(nbytes);
    std::lock_guard lock(mutex_);
    void* ptr = take_free(size);
    if (!ptr) {
      // Portable: pinned for every device's context, whichever GPU the copies go to.
      RG_CUDA_CHECK(cudaHostAlloc(&ptr, size, cudaHostAllocPortable));
      blocks_.emplace(static_cast<char*>(ptr), Block{size, {}});
    }
    record_allocation(Device::cpu(), static_cast<int64_t>(nbytes));
    return ptr;
  }

  void deallocate(void* ptr, std::size_t nbytes) override {
    if (!ptr) return;
    std::lock_guard lock(mutex_);
    auto it = blocks_.find(static_cast<char*>(ptr));
    if (it != blocks_.end()) free_.emplace(it->second.size, it->first);
    record_deallocation(Device::cpu(), static_cast<int64_t>(nbytes));
  }

  void record_use(const void* ptr, cudaStream_t stream) {
    const char* p = static_cast<const char*>(ptr);
    std::lock_guard lock(mutex_);
    auto it = blocks_.upper_bound(const_cast<char*>(p));
    if (it == blocks_.begin()) return;
    --it;
    if (p >= it->first + it->second.size) return;  // not pinned memory of ours
    int device = 0;                                // the stream's (record_pinned_use's contract)
    RG_CUDA_CHECK(cudaGetDevice(&device));
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    const std::shared_ptr<cuda::GraphMemory> graph = cuda::capture_memory(device);
    if (graph) RG_CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
    if (capturing != cudaStreamCaptureStatusNone) {
      // No event to query while capturing; the graph reads the block at every launch.
      ++it->second.graph_holds;
      std::lock_guard held(graph->mutex);
      graph->held_pinned.push_back(it->first);
      return;
    }
    cudaEvent_t event = nullptr;
    RG_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    const cudaError_t recorded = cudaEventRecord(event, stream);
    if (recorded != cudaSuccess) RG_CUDA_WARN(cudaEventDestroy(event));
    RG_CUDA_CHECK(recorded);
    it->second.uses.push_back(event);
  }

 private:
  struct Block {
    std::size_t size;
    std::vector<cudaEvent_t> uses;  // copies reading the block, possibly still running
    int graph_holds = 0;            // CUDA graphs whose copies read it at every launch
  };

  static std::size_t round_up(std::size_t nbytes) {
    std::size_t size = 512;
    while (size < nbytes) size *= 2;
    return size;
  }

  // A free block of exactly `size` whose copies have all finished, or null.
  void* take_free(std::size_t size) {
    auto [first, last] = free_.equal_range(size);
    for (auto it = first; it != last; ++it) {
      Block& block = blocks_.at(it->second);
      if (!uses_finished(block)) continue;
      void* ptr = it->second;
      free_.erase(it);
      return ptr;
    }
    return nullptr;
  }

  static bool uses_finished(Block& block) {
    if (block.graph_holds > 0) return false;
    while (!block.uses.empty()) {
      const cudaError_t status = cudaEventQuery(block.uses.back());
      if (status == cudaErrorNotReady) {
        cudaGetLastError();  // an answer, not an error
        return false;
      }
      RG_CUDA_CHECK(status);
      RG_CUDA_CHECK(cudaEventDestroy(block.uses.back()));
      block.uses.pop_back();
    }
    return true;
  }

  friend void cuda::release_pinned_holds(const std::vector<const void*>& blocks) noexcept;

  std::mutex mutex_;
  std::map<char*, Block> blocks_;           // every block, by address
  std::multimap<std::size_t, char*> free_;  // free blocks by size
};

}  // namespace

Allocator& cuda_pinned_allocator() {
  // Never destroyed: pinned tensors may outlive static destruction order, and the CUDA
  // runtime may be unloaded before a destructor would run.
  static auto* allocator = new PinnedAllocator();
  return *allocator;
}

// A graph's holds, released when it is destroyed.
void cuda::release_pinned_holds(const std::vector<const void*>& blocks) noexcept {
  auto& allocator = static_cast<PinnedAllocator&>(cuda_pinned_allocator());
  std::lock_guard lock(allocator.mutex_);
  for (const void* p : blocks) {
    auto it = allocator.blocks_.find(static_cast<char*>(const_cast<void*>(p)));
    if (it != allocator.blocks_.end() && it->second.graph_holds > 0) --it->second.graph_holds;
  }
}

void cuda::record_pinned_use(const void* ptr, cudaStream_t stream) {
  static_cast<PinnedAllocator&>(cuda_pinned_allocator()).record_use(ptr, stream);
}

}  // namespace rg
