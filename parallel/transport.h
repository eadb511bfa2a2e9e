#pragma once
// Transport: the point-to-point messages the ring allreduce is built on. The ring needs one
// primitive — send to the right neighbour while receiving from the left one — so a backend
// implements just that: MPI with Isend/Irecv (parallel/mpi/mpi_transport.h), NCCL with
// ncclSend/ncclRecv inside one ncclGroupStart/End (parallel/nccl/), a test with in-process
// queues.
//
// The ring also needs scratch space and the elementwise reduction, where the data lives: host
// memory by default (reduce.h's loops); a transport of GPU memory overrides the three hooks
// below, and then "done" means done in the order of its stream, like the messages.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "parallel/reduce_functors.h"

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

  // `bytes` of scratch memory where the data lives, valid until the next call.
  virtual void* scratch(std::size_t bytes);
  // acc[i] = acc[i] ⊕ in[i] for n elements.
  virtual void combine(void* acc, const void* in, int64_t n, DType dtype, Combine how);
  // data[i] /= divisor for n elements.
  virtual void divide(void* data, int64_t n, DType dtype, int64_t divisor);

 private:
  std::vector<char> host_scratch_;
};

}  // namespace rg::parallel
