#include "core/launch_counts.h"

#include <atomic>

namespace rg {
namespace {

// Relaxed atomics: counted from any thread (DataParallel replicas, the emulator's threads never
// launch), read once a step is over.
std::atomic<int64_t> kernels{0}, library_calls{0}, copies{0};

}  // namespace

LaunchCounts launch_counts() {
  return {kernels.load(std::memory_order_relaxed), library_calls.load(std::memory_order_relaxed),
          copies.load(std::memory_order_relaxed)};
}

LaunchCounts operator-(const LaunchCounts& after, const LaunchCounts& before) {
  return {after.kernels - before.kernels, after.library_calls - before.library_calls,
          after.copies - before.copies};
}

void count_launch(Launch kind) {
  switch (kind) {
    case Launch::kernel:
      kernels.fetch_add(1, std::memory_order_relaxed);
      return;
    case Launch::library_call:
      library_calls.fetch_add(1, std::memory_order_relaxed);
      return;
    case Launch::copy:
      copies.fetch_add(1, std::memory_order_relaxed);
      return;
  }
}

}  // namespace rg
