#pragma once
// MpiTransport: the ring's send-to-the-right-while-receiving-from-the-left over one MPI
// communicator, with MPI_Irecv + MPI_Isend polled by the engine (so a lost peer is an error
// after the timeout, naming that peer, not a hang).

#include <mpi.h>

#include "parallel/mpi/engine.h"
#include "parallel/transport.h"

namespace rg::parallel::mpi {

class MpiTransport final : public Transport {
 public:
  // tag: the collective's sequence number (mod 2^15), so a message of one collective can never
  // be taken for one of another.
  MpiTransport(Engine& engine, MPI_Comm comm, int rank, int size, int tag, milliseconds timeout)
      : engine_(engine), comm_(comm), rank_(rank), size_(size), tag_(tag), timeout_(timeout) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send_recv(const void* send, std::size_t send_bytes, int to, void* recv,
                 std::size_t recv_bytes, int from) override;

 private:
  Engine& engine_;
  MPI_Comm comm_;
  int rank_, size_, tag_;
  milliseconds timeout_;
};

}  // namespace rg::parallel::mpi
