#pragma once
// The CUDA side of the allocators, for core/cuda/* only: what streams and copies tell them.

#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <vector>

namespace rg::cuda {

// Blocks of `device` allocated on `from` will be freed on `to` instead: called when the stream
// `from` is destroyed, after `to` has been made to wait for the work queued on it.
void move_blocks_to_stream(int device, cudaStream_t from, cudaStream_t to) noexcept;

// An asynchronous copy on `stream` reads the pinned host memory at `ptr`: the pinned block
// holding it is not handed out again before that work has finished. Call it with the
// stream's device current. A pointer outside pinned memory is ignored.
void record_pinned_use(const void* ptr, cudaStream_t stream);

// What a CUDA graph (core/cuda/graph.h) and the allocators share: the frees and the pinned host
// blocks held back while the graph lives.
struct GraphMemory {
  struct HeldFree {
    void* ptr;
    cudaStream_t stream;  // the stream the block was made on, where it is freed
    bool graph_made;      // the graph's own memory: it exists only once the graph has launched
  };
  int device = -1;
  bool launched = false;
  std::mutex mutex;
  std::vector<HeldFree> held_frees;
  std::vector<const void*> held_pinned;
};

// Makes `memory` the capture under way on `device` (nullptr: none) for the allocators — blocks
// allocated meanwhile are the graph's, frees are held back as graph.h says, and pinned blocks a
// copy reads are kept — and raises or lowers core/graph_capture.h's flag with it. The caller
// holds `memory` for the graph's life.
void set_capture_memory(int device, std::shared_ptr<GraphMemory> memory);
// The capture under way on `device`, or null (one atomic read when there is none).
std::shared_ptr<GraphMemory> capture_memory(int device) noexcept;
// After the graph is destroyed: frees what its memory held back (errors go to stderr).
void release_graph_memory(GraphMemory& memory) noexcept;
// The pinned allocator's side of release_graph_memory.
void release_pinned_holds(const std::vector<const void*>& blocks) noexcept;

}  // namespace rg::cuda
