#pragma once
// A gate on a GPU stream, for tests that the host queues work without waiting for the GPU.
// While it is closed the stream runs nothing queued after it (a host function on the stream
// waits for open()), so a call that waits for the stream or the device cannot return. That
// tells the two apart whatever the GPU's speed, and never hangs: the gate opens after a time
// limit. CUDA builds only. (A first version ran f on a thread of its own; a train step there
// waited, most likely for the new thread's cuDNN and cuBLAS handles being created.)
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <thread>

#include "core/cuda/cuda_check.h"

namespace rg::testing {

class StreamGate {
 public:
  explicit StreamGate(cudaStream_t stream) : stream_(stream) {
    RG_CUDA_CHECK(cudaLaunchHostFunc(stream_, &hold, &open_));
  }
  ~StreamGate() {
    open();
    cudaStreamSynchronize(stream_);  // the host function has seen the flag: open_ may go
  }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  void open() { open_.store(true); }

  // Runs f on this thread (its library handles, its autocast and grad modes): true when f
  // returned within `limit` with the gate closed. A watchdog thread opens the gate at the limit,
  // so an f that waits for the GPU returns then, and false comes back instead of a hang.
  bool returns_while_closed(const std::function<void()>& f,
                            std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    std::promise<void> finished;
    std::future<void> done = finished.get_future();
    bool timed_out = false;  // written by the watchdog, read after joining it
    std::thread watchdog([&] {
      timed_out = done.wait_for(limit) != std::future_status::ready;
      open();
    });
    try {
      f();
    } catch (...) {
      finished.set_value();
      watchdog.join();
      throw;
    }
    finished.set_value();
    watchdog.join();
    return !timed_out;
  }

 private:
  static void CUDART_CB hold(void* flag) {
    while (!static_cast<std::atomic<bool>*>(flag)->load())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  cudaStream_t stream_;
  std::atomic<bool> open_{false};
};

}  // namespace rg::testing
