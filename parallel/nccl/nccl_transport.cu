#include "parallel/nccl/nccl_transport.h"

#include "core/cuda/stream.h"
#include "parallel/reduce_kernels.cuh"

namespace rg::parallel::nccl {

void NcclTransport::send_recv(const void* send, std::size_t send_bytes, int to, void* recv,
                              std::size_t recv_bytes, int from) {
  // One group: NCCL runs both at once, so a ring of these cannot deadlock.
  RG_NCCL_CHECK(ncclGroupStart(), label_);
  if (send_bytes > 0)
    RG_NCCL_CHECK(ncclSend(send, send_bytes, ncclUint8, to, comm_.get(), comm_.stream()), label_,
                  " (send to rank ", to, ")");
  if (recv_bytes > 0)
    RG_NCCL_CHECK(ncclRecv(recv, recv_bytes, ncclUint8, from, comm_.get(), comm_.stream()), label_,
                  " (receive from rank ", from, ")");
  RG_NCCL_CHECK(ncclGroupEnd(), label_);
  comm_.wait_queued([&] {
    return label_ + " to queue its messages to rank " + std::to_string(to) + " and from rank " +
           std::to_string(from);
  });
}

void* NcclTransport::scratch(std::size_t bytes) {
  if (!scratch_.defined() || static_cast<std::size_t>(scratch_.numel()) < bytes) {
    cuda::StreamGuard on(comm_.device(), comm_.stream());
    scratch_ = empty({static_cast<int64_t>(bytes)}, {DType::u8, Device::cuda(comm_.device())});
  }
  return scratch_.data_ptr();
}

void NcclTransport::combine(void* acc, const void* in, int64_t n, DType dtype, Combine how) {
  launch_combine(acc, in, n, dtype, how, comm_.stream());
}

void NcclTransport::divide(void* data, int64_t n, DType dtype, int64_t divisor) {
  launch_divide(data, n, dtype, divisor, comm_.stream());
}

}  // namespace rg::parallel::nccl
