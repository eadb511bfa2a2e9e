#pragma once
// The ring allreduce over NCCL: the Transport (parallel/transport.h) of GPU memory. A ring step's
// send and receive are one ncclSend/ncclRecv group on the communicator's stream; scratch space,
// the reduction and the division of an average are kernels on the same stream
// (parallel/reduce_kernels.cuh). Nothing waits on the host: the whole ring is queued in stream
// order, and NcclComm::wait_done watches it.

#include "core/tensor.h"
#include "parallel/nccl/nccl_comm.h"
#include "parallel/transport.h"

namespace rg::parallel::nccl {

class NcclTransport final : public Transport {
 public:
  NcclTransport(NcclComm& comm, int rank, int size, std::string label)
      : comm_(comm), rank_(rank), size_(size), label_(std::move(label)) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send_recv(const void* send, std::size_t send_bytes, int to, void* recv,
                 std::size_t recv_bytes, int from) override;
  void* scratch(std::size_t bytes) override;
  void combine(void* acc, const void* in, int64_t n, DType dtype, Combine how) override;
  void divide(void* data, int64_t n, DType dtype, int64_t divisor) override;

 private:
  NcclComm& comm_;
  int rank_, size_;
  std::string label_;
  Tensor scratch_;  // on the communicator's device, allocated in its stream's order
};

}  // namespace rg::parallel::nccl
