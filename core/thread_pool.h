#pragma once
// A small CPU thread pool. parallel_for splits [0, n) into one contiguous chunk per thread;
// the calling thread runs a chunk too (parallel_claim hands out items one at a time instead).
// Nested calls run serially, so a kernel may call parallel_for without knowing whether its
// caller already did.
//
// Several threads may call parallel_for at once (safe): the first one takes the process-wide
// pool and the others run their loop serially on their own thread. That is not a fair split
// of the cores, so threads that compute side by side for a long time — DataParallel's replicas
// on logical cpu devices — each hold a ThreadShare: a pool of their own with their share of the
// threads.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

namespace rg {

class ThreadPool;  // defined in thread_pool.cpp

// Threads used by CPU kernels (default: the machine's hardware threads).
int num_threads();
// Changes the thread count (>= 1); takes effect for the next parallel_for.
void set_num_threads(int n);

// Calls fn(begin, end) over disjoint chunks covering [0, n). Chunks are never smaller than
// `grain` elements (so small loops stay on one thread). Exceptions thrown by fn are rethrown
// in the caller after every chunk finished.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Calls body(i, scratch) for every item i in [0, items), each item claimed by whichever thread
// is free: for items of uneven cost, or threads of uneven speed (parallel_for's chunks are fixed
// when it starts, so a thread that runs slower holds up the others). make_scratch() runs once
// on each thread, before its first item. Which thread computes an item varies from run to run:
// the results must not depend on it.
template <class MakeScratch, class Body>
void parallel_claim(int64_t items, MakeScratch&& make_scratch, Body&& body) {
  std::atomic<int64_t> next{0};
  const int64_t threads = num_threads();
  parallel_for(items < threads ? items : threads, 1, [&](int64_t, int64_t) {
    auto scratch = make_scratch();
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < items;) body(i, scratch);
  });
}

// Index of the calling worker within the current parallel_for (0 = caller), for per-thread
// scratch buffers; 0 outside parallel_for.
int thread_index();

// A private pool of `threads` threads, the thread that uses it included (so 1 means: run
// every loop on that thread alone, with no worker). Create one per long-lived computing
// thread and install it there with ScopedThreadShare.
class ThreadShare {
 public:
  explicit ThreadShare(int threads);
  ~ThreadShare();
  ThreadShare(const ThreadShare&) = delete;
  ThreadShare& operator=(const ThreadShare&) = delete;
  int threads() const;

 private:
  friend class ScopedThreadShare;
  std::shared_ptr<ThreadPool> pool_;
};

// While it lives, parallel_for and num_threads() on this thread use `share` instead of the
// process-wide pool. One thread at a time may use a share.
class ScopedThreadShare {
 public:
  explicit ScopedThreadShare(ThreadShare& share);
  ~ScopedThreadShare();
  ScopedThreadShare(const ScopedThreadShare&) = delete;
  ScopedThreadShare& operator=(const ScopedThreadShare&) = delete;

 private:
  std::shared_ptr<ThreadPool> previous_;
};

}  // namespace rg
