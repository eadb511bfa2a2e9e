// The Engine's part of departures (departures.h): sending, receiving and counting the notices a
// rank that leaves sends the others. Judging them is departures.cpp's; waiting, engine.cpp's.
#include <mpi.h>

#include <algorithm>
#include <thread>

#include "core/error.h"
#include "parallel/mpi/engine.h"

namespace rg::parallel::mpi {

namespace {
// The tag of departure notices on the engine's communicator (its collectives never mix with
// point-to-point messages, by MPI's rules).
constexpr int kNoticeTag = 1;
// How long a rank that ends without shutting down waits for its notices to leave.
constexpr milliseconds kEndingGrace{2000};
}  // namespace

int Engine::add_group() {
  completed_.push_back(0);
  return static_cast<int>(completed_.size()) - 1;
}

void Engine::completed(int group, int64_t seq) {
  int64_t& done = completed_.at(static_cast<std::size_t>(group));
  done = std::max(done, seq);
}

void Engine::send_notice(NoticeKind kind, const std::string& how, const std::vector<int>& to) {
  if (!notices_ready_ || to.empty()) return;
  const std::string bytes = encode({.kind = kind, .how = how, .completed = completed_});
  for (int r : to) {
    Sent& sent = sent_.emplace_back();
    sent.bytes = bytes;
    // Best effort: a notice that cannot go changes nothing else (the peer is gone).
    if (MPI_Isend(sent.bytes.data(), static_cast<int>(sent.bytes.size()), MPI_CHAR, r, kNoticeTag,
                  comm_, &sent.request) != MPI_SUCCESS)
      sent.request = MPI_REQUEST_NULL;
  }
}

void Engine::send_notice_to_all(NoticeKind kind, const std::string& how) {
  std::vector<int> to;
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && !is_dead(r)) to.push_back(r);
  send_notice(kind, how, to);
}

void Engine::receive_notices() {
  if (!notices_ready_) return;
  for (;;) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kNoticeTag, comm_, &flag, &status) != MPI_SUCCESS || !flag)
      return;
    int bytes = 0;
    MPI_Get_count(&status, MPI_CHAR, &bytes);
    std::string text(static_cast<std::size_t>(std::max(bytes, 0)), '\0');
    if (MPI_Recv(text.data(), bytes, MPI_CHAR, status.MPI_SOURCE, kNoticeTag, comm_,
                 MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return;
    try {
      notices_[status.MPI_SOURCE] = decode(text);
    } catch (const Error&) {  // not ours: ignored rather than mistaken for a departure
    }
  }
}

bool Engine::sends_done() {
  for (Sent& sent : sent_) {
    int flag = 1;
    if (sent.request != MPI_REQUEST_NULL &&
        MPI_Test(&sent.request, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      sent.request = MPI_REQUEST_NULL;
    if (!flag) return false;
  }
  return true;
}

void Engine::serve_ending_request() {
  std::string how;
  {
    std::lock_guard lock(mutex_);
    if (!ending_requested_ || ending_announced_) return;
    how = ending_how_;
  }
  send_notice_to_all(NoticeKind::ending, how);
  const auto deadline = Clock::now() + kEndingGrace;
  while (!sends_done() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(1));
  {
    std::lock_guard lock(mutex_);
    ending_announced_ = true;
    ending_requested_ = false;
  }
  announced_.notify_all();
}

void Engine::announce_ending(const std::string& how) {
  if (std::this_thread::get_id() == thread_.get_id()) {  // terminate on the thread itself
    {
      std::lock_guard lock(mutex_);
      ending_how_ = how;
      ending_requested_ = true;
    }
    serve_ending_request();
    return;
  }
  std::unique_lock lock(mutex_);
  if (stopped_ || ending_announced_ || !fault_.empty()) return;
  ending_how_ = how;
  ending_requested_ = true;
  cv_.notify_all();
  announced_.wait_for(lock, kEndingGrace, [&] { return ending_announced_; });
}

}  // namespace rg::parallel::mpi
