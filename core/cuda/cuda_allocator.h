#pragma once
// The CUDA side of the allocators, for core/cuda/* only: what streams and copies tell them.

#include <cuda_runtime.h>

namespace rg::cuda {

// Blocks of `device` allocated on `from` will be freed on `to` instead: called when the stream
// `from` is destroyed, after `to` has been made to wait for the work queued on it.
void move_blocks_to_stream(int device, cudaStream_t from, cudaStream_t to) noexcept;

// An asynchronous copy on `stream` reads the pinned host memory at `ptr`: the pinned block
// holding it is not handed out again before that work has finished. Call it with the
// stream's device current. A pointer outside pinned memory is ignored.
void record_pinned_use(const void* ptr, cudaStream_t stream);

}  // namespace rg::cuda
