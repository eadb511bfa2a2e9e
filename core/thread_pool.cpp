#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"

namespace rg {
namespace {

thread_local int tls_thread_index = 0;
thread_local bool tls_in_parallel = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Polls done() kSpinRounds times (~40 µs on this machine) before the caller goes to sleep. A
// training step runs hundreds of parallel loops separated by microseconds of serial work; a futex
// sleep and wake-up costs tens of microseconds each time, more than many of those loops themselves.
constexpr int kSpinRounds = 1 << 10;
template <class Done>
bool spin_until(Done done) {
  for (int i = 0; i < kSpinRounds; ++i) {
    if (done()) return true;
    cpu_relax();
  }
  return done();
}

}  // namespace

// Workers spin briefly, then sleep on a condition variable; a job is a function and a chunk
// count. Chunks are claimed through an atomic counter, so a slow thread never holds up the
// others' chunks.
class ThreadPool {
 public:
  explicit ThreadPool(int threads) : threads_(threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
  }
  ~ThreadPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int threads() const { return threads_; }

  // Returns false (and does nothing) when another thread is using the pool: the caller then
  // runs serially — safe, but unfair to it; threads that compute side by side for long hold a
  // ThreadShare instead.
  bool run(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t)>& fn) {
    std::unique_lock job_lock(job_mutex_, std::try_to_lock);
    if (!job_lock.owns_lock()) return false;
    {
      std::lock_guard lock(mutex_);
      fn_ = &fn;
      n_ = n;
      chunks_ = chunks;
      next_chunk_ = 0;
      running_ = static_cast<int>(workers_.size());
      error_ = nullptr;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    run_chunks(0);
    spin_until([this] { return running_.load(std::memory_order_acquire) == 0; });
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return running_ == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  void work(int index) {
    tls_thread_index = index;
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
      }
      run_chunks(index);
      // The last worker out wakes the caller, under the mutex so that the wake-up cannot fall
      // between the caller's check of running_ and its sleep.
      if (running_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard lock(mutex_);
        done_.notify_one();
      }
    }
  }

  void run_chunks(int index) {
    tls_in_parallel = true;
    tls_thread_index = index;
    const int64_t chunk = (n_ + chunks_ - 1) / chunks_;
    for (int64_t c; (c = next_chunk_.fetch_add(1)) < chunks_;) {
      const int64_t begin = c * chunk, end = std::min(n_, begin + chunk);
      if (begin >= end) continue;
      try {
        (*fn_)(begin, end);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
    tls_in_parallel = false;
    if (index == 0) tls_thread_index = 0;
  }

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex job_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  bool stopping_ = false;
  std::atomic<uint64_t> generation_{0};  // written under mutex_, read by spinning workers
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunks_ = 0;
  std::atomic<int64_t> next_chunk_{0};
  std::atomic<int> running_{0};  // workers still in the current job
  std::exception_ptr error_;
};

namespace {

std::mutex pool_mutex;
std::shared_ptr<ThreadPool> pool_instance;
int requested_threads = 0;  // 0: hardware default
// The pool of the ThreadShare installed on this thread, if any.
thread_local std::shared_ptr<ThreadPool> tls_share;

std::shared_ptr<ThreadPool> pool() {
  if (tls_share) return tls_share;
  std::lock_guard lock(pool_mutex);
  if (!pool_instance) {
    int n = requested_threads > 0 ? requested_threads
                                  : static_cast<int>(std::thread::hardware_concurrency());
    pool_instance = std::make_shared<ThreadPool>(std::max(1, n));
  }
  return pool_instance;
}

}  // namespace

ThreadShare::ThreadShare(int threads) {
  RG_CHECK(threads >= 1, "ThreadShare: thread count must be >= 1, got ", threads);
  pool_ = std::make_shared<ThreadPool>(threads);
}
ThreadShare::~ThreadShare() = default;
int ThreadShare::threads() const {
  return pool_->threads();
}

ScopedThreadShare::ScopedThreadShare(ThreadShare& share) : previous_(std::move(tls_share)) {
  tls_share = share.pool_;
}
ScopedThreadShare::~ScopedThreadShare() {
  tls_share = std::move(previous_);
}

int num_threads() {
  return pool()->threads();
}

void set_num_threads(int n) {
  RG_CHECK(n >= 1, "set_num_threads: thread count must be >= 1, got ", n);
  std::lock_guard lock(pool_mutex);
  requested_threads = n;
  pool_instance.reset();  // rebuilt on next use; a running job keeps its own reference
}

int thread_index() {
  return tls_thread_index;
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (tls_in_parallel || n <= grain) {
    fn(0, n);
    return;
  }
  auto p = pool();
  const int64_t chunks = std::min<int64_t>(p->threads(), (n + grain - 1) / grain);
  if (chunks <= 1 || !p->run(n, chunks, fn)) {
    const bool was = tls_in_parallel;
    tls_in_parallel = true;  // the serial fallback must not re-enter the pool either
    try {
      fn(0, n);
    } catch (...) {
      tls_in_parallel = was;
      throw;
    }
    tls_in_parallel = was;
  }
}

}  // namespace rg
