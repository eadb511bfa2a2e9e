#pragma once
// The ring's Transport between threads of one process: messages from rank a to rank b queue up
// in a Wires' queue (a, b); sends never block, receives wait (with a deadline). What the ring's
// unit tests and check_equivalence's grading of a textbook ring run on, without MPI.
//
//   Wires wires(4);
//   run_ranks(4, [&](int r) { ThreadTransport t(wires, r); ring_allreduce(t, ...); });

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "parallel/transport.h"

namespace rg::parallel {

class Wires {
 public:
  explicit Wires(int n, std::chrono::milliseconds timeout = std::chrono::seconds(5))
      : n_(n), timeout_(timeout), queues_(static_cast<std::size_t>(n * n)) {}
  int size() const { return n_; }
  void push(int from, int to, const void* data, std::size_t bytes);
  // Waits for the next message from `from` to `to`, which must be `bytes` long.
  void pop(int from, int to, void* data, std::size_t bytes);

 private:
  std::deque<std::vector<char>>& queue(int a, int b) {
    return queues_[static_cast<std::size_t>(a * n_ + b)];
  }
  int n_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::deque<std::vector<char>>> queues_;
};

class ThreadTransport final : public Transport {
 public:
  ThreadTransport(Wires& wires, int rank) : wires_(wires), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return wires_.size(); }
  void send_recv(const void* send, std::size_t send_bytes, int to, void* recv,
                 std::size_t recv_bytes, int from) override;

 private:
  Wires& wires_;
  int rank_;
};

}  // namespace rg::parallel
