#pragma once
// The NCCL watchdog's logic, apart from NCCL, so that it is tested on every machine against a
// fake communicator (tests/parallel/watchdog_test.cpp); NcclComm (nccl_comm.h) runs it with the
// real one.
//
// The communicator is non-blocking: NCCL calls return at once, possibly "in progress", and the
// GPU works on. While a collective runs, the engine's communication thread polls three things —
// the communicator's asynchronous state (ncclCommGetAsyncError), whether the work has finished
// (a CUDA event), and the clock and the peers (Engine::wait_until: the collective timeout, a
// rank whose process has exited) — as PyTorch's watchdog thread does. On any fault it aborts the
// communicator (ncclCommAbort: NCCL's kernels stop waiting for the peer that will never come,
// which a plain timeout could not do) and throws the named error, which then ends the job as
// OnFault says. An aborted communicator is never used again.

#include <chrono>
#include <functional>
#include <string>

namespace rg::parallel::nccl {

using std::chrono::milliseconds;

enum class CommState { ok, in_progress, failed };

// What the watchdog polls and aborts: the NCCL communicator, or a test's fake.
class Watched {
 public:
  virtual ~Watched() = default;
  // The communicator's asynchronous state (ncclCommGetAsyncError); for `failed`, `error` gets
  // NCCL's description.
  virtual CommState state(std::string& error) = 0;
  virtual void abort() = 0;  // ncclCommAbort
};

// Calls done() until it returns true; throws rg::Error naming what() after `timeout`, or earlier
// for a fault it can see (Engine::wait_until: a peer whose process has exited). Rethrows what
// done() throws.
using Poll = std::function<void(const std::function<bool()>& done, milliseconds timeout,
                                const std::function<std::string()>& what)>;

// A Poll with nothing but a deadline, for programs and tests without an MPI engine.
void poll_with_deadline(const std::function<bool()>& done, milliseconds timeout,
                        const std::function<std::string()>& what);

// What a wait waits for: NCCL to finish queueing the last call (the state leaves in_progress),
// or the work on the GPU to finish (`finished()` — a CUDA event — returns true).
enum class Until { queued, finished };

class Watchdog {
 public:
  Watchdog(Watched& comm, Poll poll, milliseconds timeout)
      : comm_(comm), poll_(std::move(poll)), timeout_(timeout) {}

  // Returns when the wait is over; on a timeout, a dead peer, an error of the communicator or
  // of finished(): aborts the communicator (once) and throws rg::Error naming what() and the
  // cause, ending in "; NCCL communicator aborted (ncclCommAbort)". After an abort every wait
  // fails at once.
  void wait(Until until, const std::function<std::string()>& what,
            const std::function<bool()>& finished = {});
  bool aborted() const { return aborted_; }

 private:
  [[noreturn]] void abort_and_fail(const std::string& message);

  Watched& comm_;
  Poll poll_;
  milliseconds timeout_;
  bool aborted_ = false;
  std::string abort_reason_;
};

}  // namespace rg::parallel::nccl
