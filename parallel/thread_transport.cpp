#include "parallel/thread_transport.h"

#include <cstring>

#include "core/error.h"

namespace rg::parallel {

void Wires::push(int from, int to, const void* data, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  const char* c = static_cast<const char*>(data);
  queue(from, to).emplace_back(c, c + bytes);
  cv_.notify_all();
}

void Wires::pop(int from, int to, void* data, std::size_t bytes) {
  std::unique_lock lock(mutex_);
  RG_CHECK(cv_.wait_for(lock, timeout_, [&] { return !queue(from, to).empty(); }),
           "timed out waiting for rank ", from);
  std::vector<char> m = std::move(queue(from, to).front());
  queue(from, to).pop_front();
  RG_CHECK(m.size() == bytes, "rank ", from, " sent a message of ", m.size(), " bytes to rank ", to,
           ", which expected ", bytes);
  std::memcpy(data, m.data(), bytes);
}

void ThreadTransport::send_recv(const void* send, std::size_t send_bytes, int to, void* recv,
                                std::size_t recv_bytes, int from) {
  if (send_bytes) wires_.push(rank_, to, send, send_bytes);
  if (recv_bytes) wires_.pop(from, rank_, recv, recv_bytes);
}

}  // namespace rg::parallel
