// Device memory: a stream-ordered caching allocator on CUDA memory pools.
//
// cudaMallocAsync takes memory from the device's default pool in the order of the current
// stream; cudaFreeAsync gives it back in the order of the stream the block was allocated on
// (remembered per block), so a block is reused only after the kernels that used it ran. The
// pool caches: with the release threshold at its maximum, freed memory stays reserved by the
// process instead of going back to the driver at each synchronisation (the default threshold,
// 0, would make every step pay for fresh device memory). The pool itself reuses memory across
// streams through the events it tracks (its default reuse policies). empty_cache() trims it.
//
// A block also used on other streams (a communication stream reading gradients) must say so
// with rg::cuda::record_stream: at its free, the allocating stream is made to wait for the
// work queued on those streams so far, and the free is queued after it — what PyTorch's
// cudaMallocAsync backend does for Tensor.record_stream.
//
// Inside a CUDA graph capture (core/cuda/graph.h) the same calls become the graph's allocation
// and free nodes. Each block remembers the graph it was made in; a free is held back, until the
// graph is destroyed, when the block is the graph's own and the capture is over (the graph makes
// it again at each launch), or when it was made before the capture and is dropped inside it
// (the graph's kernels may read it at every launch).
#include <array>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/cuda/cuda_allocator.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/device_allocators.h"
#include "core/cuda/stream.h"
#include "core/graph_capture.h"
#include "core/tensor.h"

namespace rg {
namespace {

constexpr int kMaxDevices = 64;

// The capture under way on each device. Whether there is one is core/graph_capture.h's flag,
// one atomic read, so that allocations outside a capture skip the lock.
std::mutex capture_mutex;
std::array<std::shared_ptr<cuda::GraphMemory>, kMaxDevices> captures_by_device;

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int index) : index_(index) {
    cuda::DeviceGuard guard(index);
    int supported = 0;
    RG_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, index));
    RG_CHECK(supported, Device::cuda(index),
             ": the GPU or its driver does not support stream-ordered memory pools "
             "(cudaMallocAsync), which ringgrad's CUDA allocator is built on");
    RG_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool_, index));
    uint64_t keep_everything = UINT64_MAX;
    RG_CUDA_CHECK(
        cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep_everything));
  }

  void* allocate(std::size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    cuda::DeviceGuard guard(index_);
    const cudaStream_t stream = cuda::current_stream(index_);
    void* ptr = nullptr;
    cudaError_t status = cudaMallocAsync(&ptr, nbytes, stream);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky; clear it before retrying
      // Memory freed on other streams whose frees the pool cannot yet prove complete is
      // unusable for this stream: wait for the device, release what the pool holds, retry once.
      RG_CUDA_CHECK(cudaDeviceSynchronize());
      RG_CUDA_CHECK(cudaMemPoolTrimTo(pool_, 0));
      status = cudaMallocAsync(&ptr, nbytes, stream);
      if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        fail(out_of_memory_message(nbytes));
      }
    }
    if (status != cudaSuccess) cudaGetLastError();
    RG_CHECK(status == cudaSuccess, "cudaMallocAsync of ", format_bytes(nbytes), " on ",
             Device::cuda(index_), " failed: ", cudaGetErrorName(status), " (",
             cudaGetErrorString(status), ")");
    {
      // The graph's own block when this stream is the one being captured (not another thread's).
      std::shared_ptr<cuda::GraphMemory> graph = cuda::capture_memory(index_);
      cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
      if (graph && (cudaStreamIsCapturing(stream, &capturing) != cudaSuccess ||
                    capturing == cudaStreamCaptureStatusNone))
        graph.reset();
      std::lock_guard lock(mutex_);
      blocks_.emplace(ptr, Block{stream, {}, std::move(graph)});
    }
    record_allocation(Device::cuda(index_), static_cast<int64_t>(nbytes));
    return ptr;
  }

  // Called from Storage's destructor: reports errors on stderr instead of throwing.
  void deallocate(void* ptr, std::size_t nbytes) override {
    if (!ptr) return;
    Block block{cudaStreamLegacy, {}, {}};
    {
      std::lock_guard lock(mutex_);
      auto it = blocks_.find(ptr);
      if (it != blocks_.end()) {
        block = std::move(it->second);
        blocks_.erase(it);
      }
    }
    if (hold_for_graph(ptr, block)) {
      record_deallocation(Device::cuda(index_), static_cast<int64_t>(nbytes));
      return;
    }
    int previous = index_;
    RG_CUDA_WARN(cudaGetDevice(&previous));
    // cudaStreamLegacy means the legacy stream of the current device: make it this one's.
    if (previous != index_) RG_CUDA_WARN(cudaSetDevice(index_));
    for (cudaStream_t use : block.other_streams) {
      cudaEvent_t used = nullptr;
      RG_CUDA_WARN(cudaEventCreateWithFlags(&used, cudaEventDisableTiming));
      if (!used) continue;
      RG_CUDA_WARN(cudaEventRecord(used, use));
      RG_CUDA_WARN(cudaStreamWaitEvent(block.stream, used, 0));
      RG_CUDA_WARN(cudaEventDestroy(used));
    }
    RG_CUDA_WARN(cudaFreeAsync(ptr, block.stream));
    if (previous != index_) RG_CUDA_WARN(cudaSetDevice(previous));
    record_deallocation(Device::cuda(index_), static_cast<int64_t>(nbytes));
  }

  void reserved(int64_t* current, int64_t* peak) const {
    uint64_t value = 0;
    RG_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &value));
    *current = static_cast<int64_t>(value);
    RG_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &value));
    *peak = static_cast<int64_t>(value);
  }

  void reset_peak_reserved() {
    uint64_t zero = 0;  // the only value the high watermark accepts: it restarts from current
    RG_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &zero));
  }

  void trim_pool() {
    cuda::DeviceGuard guard(index_);
    // Frees become releasable once the host has seen them complete (cudaMemPoolTrimTo's notes).
    RG_CUDA_CHECK(cudaDeviceSynchronize());
    RG_CUDA_CHECK(cudaMemPoolTrimTo(pool_, 0));
  }

  void move_blocks(cudaStream_t from, cudaStream_t to) {
    std::lock_guard lock(mutex_);
    for (auto& [ptr, block] : blocks_) {
      if (block.stream == from) block.stream = to;
      for (cudaStream_t& use : block.other_streams)
        if (use == from) use = to;
    }
  }

  void record_stream(void* ptr, cudaStream_t stream) {
    std::lock_guard lock(mutex_);
    auto it = blocks_.find(ptr);
    RG_CHECK(it != blocks_.end(), "record_stream: the tensor's memory on ", Device::cuda(index_),
             " was not allocated by ringgrad's allocator (from_blob?)");
    Block& block = it->second;
    if (stream == block.stream) return;
    for (cudaStream_t use : block.other_streams)
      if (use == stream) return;
    block.other_streams.push_back(stream);
  }

 private:
  std::string out_of_memory_message(std::size_t nbytes) const {
    MemoryStats stats = counted_memory(Device::cuda(index_));
    reserved(&stats.reserved_bytes, &stats.peak_reserved_bytes);
    std::size_t free_bytes = 0, total_bytes = 0;
    const cudaError_t info = cudaMemGetInfo(&free_bytes, &total_bytes);
    if (info != cudaSuccess) cudaGetLastError();
    return detail::concat(
        Device::cuda(index_), " out of memory: requested ", format_bytes(nbytes), "; in use by ",
        "tensors ", format_bytes(stats.current_bytes), " (peak ", format_bytes(stats.peak_bytes),
        "), reserved by the memory pool ", format_bytes(stats.reserved_bytes), " (peak ",
        format_bytes(stats.peak_reserved_bytes), ")",
        info == cudaSuccess ? detail::concat("; the device has ", format_bytes(free_bytes),
                                             " free of ", format_bytes(total_bytes))
                            : std::string(),
        ". Use a smaller batch, free tensors that are no longer needed, or check that no other "
        "process holds the GPU");
  }

  int index_;
  cudaMemPool_t pool_ = nullptr;
  struct Block {
    cudaStream_t stream;                      // allocated on; freed on
    std::vector<cudaStream_t> other_streams;  // record_stream: its free waits for their work
    std::weak_ptr<cuda::GraphMemory> graph;   // the graph whose capture made it, if any
  };

  // Whether the free of `block` waits for a graph (see the top of the file); if so, queued there.
  bool hold_for_graph(void* ptr, const Block& block) noexcept {
    const std::shared_ptr<cuda::GraphMemory> owner = block.graph.lock();
    const std::shared_ptr<cuda::GraphMemory> capture = cuda::capture_memory(index_);
    // The graph's own memory after its capture, or memory made before a capture and dropped
    // inside it; made and dropped inside the capture, it is the graph's free node.
    cuda::GraphMemory* hold = owner ? (owner != capture ? owner.get() : nullptr) : capture.get();
    if (!hold) return false;
    std::lock_guard lock(hold->mutex);
    hold->held_frees.push_back({ptr, block.stream, owner != nullptr});
    return true;
  }

  std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;  // live blocks
};

std::mutex registry_mutex;

// Never destroyed: tensors may be freed during static destruction, after a registry with a
// destructor would be gone, and the CUDA runtime may already be unloaded at that point.
std::vector<CudaAllocator*>& registry() {
  static auto* allocators = new std::vector<CudaAllocator*>();
  return *allocators;
}

// The allocator of cuda:index if it was ever used, else null (without touching the driver).
CudaAllocator* existing(int index) {
  std::lock_guard lock(registry_mutex);
  auto& all = registry();
  return index >= 0 && index < static_cast<int>(all.size()) ? all[index] : nullptr;
}

}  // namespace

Allocator& cuda_allocator(int index) {
  std::lock_guard lock(registry_mutex);
  auto& all = registry();
  if (static_cast<int>(all.size()) <= index) all.resize(index + 1, nullptr);
  if (!all[index]) all[index] = new CudaAllocator(index);
  return *all[index];
}

void cuda_reserved_memory(int index, int64_t* current, int64_t* peak) {
  *current = *peak = 0;
  if (CudaAllocator* a = existing(index)) a->reserved(current, peak);
}

void cuda_reset_peak_reserved(int index) {
  if (CudaAllocator* a = existing(index)) a->reset_peak_reserved();
}

void cuda_empty_cache(int index) {
  if (CudaAllocator* a = existing(index)) a->trim_pool();
}

void cuda::record_stream(const Tensor& tensor, cudaStream_t stream) {
  RG_CHECK(tensor.device().is_cuda(), "record_stream: expected a tensor on a GPU, got ",
           tensor.describe());
  RG_CHECK(stream != cudaStreamPerThread,
           "record_stream: cudaStreamPerThread names a different stream in every host thread");
  if (!tensor.storage().data()) return;  // nothing allocated (no elements)
  // Checked on the storage, not by looking the address up: a from_blob over memory that one of
  // our blocks holds has that block's address, but its lifetime is not the block's.
  RG_CHECK(!tensor.storage().wraps_foreign_memory(), "record_stream: ", tensor.describe(),
           " wraps memory ringgrad's allocator does not own (from_blob): its owner must keep it "
           "alive until the other stream's work is done");
  static_cast<CudaAllocator&>(cuda_allocator(tensor.device().index))
      .record_stream(tensor.storage().data(), stream);
}

void cuda::set_capture_memory(int device, std::shared_ptr<GraphMemory> memory) {
  RG_CHECK(device >= 0 && device < kMaxDevices, "graph capture: invalid CUDA device index ",
           device);
  std::lock_guard lock(capture_mutex);
  auto& slot = captures_by_device[static_cast<std::size_t>(device)];
  RG_CHECK(!(slot && memory), "graph capture: a capture is already under way on cuda:", device);
  const bool underway = memory != nullptr;
  slot = std::move(memory);
  detail::set_graph_capture_underway(device, underway);
}

std::shared_ptr<cuda::GraphMemory> cuda::capture_memory(int device) noexcept {
  if (!graph_capture_underway(Device::cuda(device))) return nullptr;  // also a bad index
  std::lock_guard lock(capture_mutex);
  return captures_by_device[static_cast<std::size_t>(device)];
}

void cuda::release_graph_memory(GraphMemory& memory) noexcept {
  std::vector<GraphMemory::HeldFree> frees;
  std::vector<const void*> pinned;
  {
    std::lock_guard lock(memory.mutex);
    frees.swap(memory.held_frees);
    pinned.swap(memory.held_pinned);
  }
  int previous = memory.device;
  RG_CUDA_WARN(cudaGetDevice(&previous));
  if (previous != memory.device) RG_CUDA_WARN(cudaSetDevice(memory.device));
  for (const GraphMemory::HeldFree& f : frees) {
    // The graph's own memory exists only once it has launched (then AutoFreeOnLaunch hands the
    // last launch's to us); before that there is nothing to free.
    if (f.graph_made && !memory.launched) continue;
    RG_CUDA_WARN(cudaFreeAsync(f.ptr, f.stream));
  }
  if (previous != memory.device) RG_CUDA_WARN(cudaSetDevice(previous));
  release_pinned_holds(pinned);
}

void cuda::move_blocks_to_stream(int device, cudaStream_t from, cudaStream_t to) noexcept {
  if (CudaAllocator* a = existing(device)) a->move_blocks(from, to);
}

}  // namespace rg
