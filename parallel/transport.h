#pragma once
// Transport: the point-to-point messages the ring allreduce is built on. The ring needs one
// primitive — send to the right neighbour while receiving from the left one — so a backend
// implements just that: MPI with Isend/Irecv (parallel/mpi/mpi_transport.h), NCCL later with
// ncclSend/ncclRecv inside one ncclGroupStart/End, a test with in-process queues.

#include <cstddef>

namespace rg::parallel {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Sends send_bytes from `send` to rank `to` and receives recv_bytes into `recv` from rank
  // `from`, both in flight at once (so a ring of these cannot deadlock), and returns when both
  // are done. A size of 0 skips that direction; both ends of a message agree on its size.
  // Throws rg::Error naming the peer it waited for on a timeout or when a peer has died.
  virtual void send_recv(const void* send, std::size_t send_bytes, int to, void* recv,
                         std::size_t recv_bytes, int from) = 0;
};

}  // namespace rg::parallel
