#pragma once
// A small CPU thread pool. parallel_for splits [0, n) into one contiguous chunk per thread;
// the calling thread runs a chunk too. Nested calls run serially, so a kernel may call
// parallel_for without knowing whether its caller already did.

#include <cstdint>
#include <functional>

namespace rg {

// Threads used by CPU kernels (default: the machine's hardware threads).
int num_threads();
// Changes the thread count (>= 1); takes effect for the next parallel_for.
void set_num_threads(int n);

// Calls fn(begin, end) over disjoint chunks covering [0, n). Chunks are never smaller than
// `grain` elements (so small loops stay on one thread). Exceptions thrown by fn are rethrown
// in the caller after every chunk finished.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Index of the calling worker within the current parallel_for (0 = caller), for per-thread
// scratch buffers; 0 outside parallel_for.
int thread_index();

}  // namespace rg
