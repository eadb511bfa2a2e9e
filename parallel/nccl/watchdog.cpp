#include "parallel/nccl/watchdog.h"

#include <thread>

#include "core/error.h"

namespace rg::parallel::nccl {

void poll_with_deadline(const std::function<bool()>& done, milliseconds timeout,
                        const std::function<std::string()>& what) {
  const auto start = std::chrono::steady_clock::now();
  while (!done()) {
    if (std::chrono::steady_clock::now() - start >= timeout)
      fail("timed out after ", timeout.count(), " ms waiting for ", what());
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void Watchdog::abort_and_fail(const std::string& message) {
  if (!aborted_) {
    aborted_ = true;
    abort_reason_ = message;
    comm_.abort();  // its own error, if any, would not add to `message`
  }
  fail(message, "; NCCL communicator aborted (ncclCommAbort)");
}

void Watchdog::wait(Until until, const std::function<std::string()>& what,
                    const std::function<bool()>& finished) {
  if (aborted_)
    fail("the NCCL communicator was aborted after an earlier fault (", abort_reason_,
         ") and is never used again; waiting for ", what());
  CommState state = CommState::in_progress;
  std::string error;
  try {
    poll_(
        [&] {
          state = comm_.state(error);
          if (state == CommState::failed) return true;
          if (until == Until::queued) return state == CommState::ok;
          return finished();
        },
        timeout_, what);
  } catch (const Error& e) {
    abort_and_fail(e.what());
  }
  if (state == CommState::failed)
    abort_and_fail("NCCL failed while waiting for " + what() + ": " + error);
}

}  // namespace rg::parallel::nccl
