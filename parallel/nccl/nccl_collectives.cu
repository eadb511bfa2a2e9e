// MpiGroup's collectives on cuda tensors (declared in parallel/mpi/mpi_group.h): NCCL, with the
// numbering, ordering and sequence checks of the MPI ones. CUDA builds only.
#include <cuda_runtime.h>

#include "core/cuda/cuda_check.h"
#include "core/cuda/stream.h"
#include "core/trace.h"
#include "parallel/collective_checks.h"
#include "parallel/mpi/mpi_group.h"
#include "parallel/nccl/nccl_comm.h"
#include "parallel/nccl/nccl_transport.h"
#include "parallel/reduce_kernels.cuh"
#include "parallel/ring_allreduce.h"

namespace rg::parallel::mpi {
namespace {

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::average:  // a sum, then our division (reduce.h's rule, as the ring does)
      return ncclSum;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      return ncclMin;
  }
  fail("nccl: invalid ReduceOp ", static_cast<int>(op));
}

RingOptions ring_options(const ProcessGroupOptions& options, const char* kind, int64_t seq) {
  return RingOptions{.chunk_bytes = options.ring_chunk_bytes,
                     .label = std::string(kind) + " #" + std::to_string(seq)};
}

}  // namespace

std::shared_ptr<Work> MpiGroup::issue_cuda(Call call, std::vector<Tensor> keep, int device,
                                           std::function<void(const Call&, nccl::NcclComm&)> body) {
  // The collective reads what the caller's stream computes before this call: an event marks
  // that point, and the communicator's stream waits for it.
  cudaEvent_t ready = nullptr;
  {
    cuda::DeviceGuard guard(device);
    RG_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    RG_CUDA_CHECK(cudaEventRecord(ready, cuda::current_stream(device)));
  }
  return issue(call, std::move(keep), [this, device, ready, body = std::move(body)](const Call& c) {
    struct Destroy {
      cudaEvent_t event;
      ~Destroy() { RG_CUDA_WARN(cudaEventDestroy(event)); }
    } destroy{ready};
    if (!nccl_) nccl_ = nccl::NcclComm::create(engine_, data_, device, options_.timeout);
    RG_CHECK(nccl_->device() == device,
             "this process's NCCL communicator is on cuda:", nccl_->device(),
             " (one GPU per process), but the collective's tensors are on cuda:", device);
    cuda::DeviceGuard guard(device);
    // Scratch tensors of the collective are allocated, used and freed in this stream's order.
    cuda::StreamGuard on(device, nccl_->stream());
    RG_CUDA_CHECK(cudaStreamWaitEvent(nccl_->stream(), ready, 0));
    {
      // The timeline: the collective's work on the communicator's stream (CUDA events).
      trace::DeviceSpan on_gpu(Device::cuda(device), "collective (NCCL stream)");
      body(c, *nccl_);
    }
    nccl_->wait_done([&] {
      return describe(c) + " to finish on the GPUs (NCCL does not say which rank is late)";
    });
  });
}

std::shared_ptr<Work> MpiGroup::allreduce(OnCuda, const Tensor& tensor, ReduceOp op) {
  const int device = tensor.device().index;
  check_cuda_tensor("allreduce", tensor, device);
  Call call{.count = tensor.numel(),
            .kind = static_cast<int32_t>(Kind::allreduce),
            .op = static_cast<int32_t>(op),
            .dtype = static_cast<int32_t>(tensor.dtype()),
            .algorithm = static_cast<int32_t>(options_.algorithm)};
  return issue_cuda(call, {tensor}, device, [this, tensor, op](const Call& c, nccl::NcclComm& nc) {
    if (options_.algorithm == AllreduceAlgorithm::ring) {
      nccl::NcclTransport transport(nc, rank(), size(), describe(c));
      ring_allreduce(transport, tensor.data_ptr(), tensor.numel(), tensor.dtype(), op,
                     ring_options(options_, "allreduce", c.seq));
      return;
    }
    RG_NCCL_CHECK(
        ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(),
                      static_cast<std::size_t>(tensor.numel()), nccl::nccl_type(tensor.dtype()),
                      nccl_op(op), nc.get(), nc.stream()),
        describe(c));
    nc.wait_queued([&] { return describe(c) + " to be queued"; });
    if (op == ReduceOp::average)
      launch_divide(tensor.data_ptr(), tensor.numel(), tensor.dtype(), size(), nc.stream());
  });
}

std::shared_ptr<Work> MpiGroup::broadcast(OnCuda, const Tensor& tensor, int root) {
  const int device = tensor.device().index;
  check_cuda_tensor("broadcast", tensor, device);
  check_root("nccl", size(), root);
  Call call{.count = tensor.numel(),
            .kind = static_cast<int32_t>(Kind::broadcast),
            .root = root,
            .dtype = static_cast<int32_t>(tensor.dtype())};
  return issue_cuda(call, {tensor}, device, [tensor, root](const Call& c, nccl::NcclComm& nc) {
    RG_NCCL_CHECK(ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(),
                                static_cast<std::size_t>(tensor.numel()),
                                nccl::nccl_type(tensor.dtype()), root, nc.get(), nc.stream()),
                  describe(c));
    nc.wait_queued([&] { return describe(c) + " to be queued"; });
  });
}

std::shared_ptr<Work> MpiGroup::allgather(OnCuda, const Tensor& output, const Tensor& input) {
  const int device = input.device().index;
  check_cuda_tensor("allgather", output, device);
  check_cuda_tensor("allgather", input, device);
  check_allgather_sizes(size(), output, input);
  Call call{.count = input.numel(),
            .kind = static_cast<int32_t>(Kind::allgather),
            .dtype = static_cast<int32_t>(input.dtype()),
            .algorithm = static_cast<int32_t>(options_.algorithm)};
  return issue_cuda(
      call, {output, input}, device, [this, output, input](const Call& c, nccl::NcclComm& nc) {
        const int64_t n = input.numel();
        if (options_.algorithm == AllreduceAlgorithm::native) {
          RG_NCCL_CHECK(
              ncclAllGather(input.data_ptr(), output.data_ptr(), static_cast<std::size_t>(n),
                            nccl::nccl_type(input.dtype()), nc.get(), nc.stream()),
              describe(c));
          nc.wait_queued([&] { return describe(c) + " to be queued"; });
          return;
        }
        // Our slice goes in place first; the ring fills in the others'.
        RG_CUDA_CHECK(cudaMemcpyAsync(
            static_cast<char*>(output.data_ptr()) + rank() * input.nbytes(), input.data_ptr(),
            input.nbytes(), cudaMemcpyDeviceToDevice, nc.stream()));
        nccl::NcclTransport transport(nc, rank(), size(), describe(c));
        ring_allgather(transport, output.data_ptr(), n, input.dtype(),
                       ring_options(options_, "allgather", c.seq));
      });
}

std::shared_ptr<Work> MpiGroup::reduce_scatter(OnCuda, const Tensor& output, const Tensor& input,
                                               ReduceOp op) {
  const int device = input.device().index;
  check_cuda_tensor("reduce_scatter", output, device);
  check_cuda_tensor("reduce_scatter", input, device);
  check_reduce_scatter_sizes(size(), output, input);
  Call call{.count = output.numel(),
            .kind = static_cast<int32_t>(Kind::reduce_scatter),
            .op = static_cast<int32_t>(op),
            .dtype = static_cast<int32_t>(input.dtype()),
            .algorithm = static_cast<int32_t>(options_.algorithm)};
  return issue_cuda(
      call, {output, input}, device, [this, output, input, op](const Call& c, nccl::NcclComm& nc) {
        const int64_t n = output.numel();
        if (options_.algorithm == AllreduceAlgorithm::native) {
          RG_NCCL_CHECK(
              ncclReduceScatter(input.data_ptr(), output.data_ptr(), static_cast<std::size_t>(n),
                                nccl::nccl_type(input.dtype()), nccl_op(op), nc.get(), nc.stream()),
              describe(c));
          nc.wait_queued([&] { return describe(c) + " to be queued"; });
          if (op == ReduceOp::average)
            launch_divide(output.data_ptr(), n, output.dtype(), size(), nc.stream());
          return;
        }
        // The ring reduces in place, and the input is the caller's: work on a copy (made on
        // the communicator's stream, the current one here).
        const Tensor scratch = input.clone();
        nccl::NcclTransport transport(nc, rank(), size(), describe(c));
        ring_reduce_scatter(transport, scratch.data_ptr(), n, input.dtype(), op,
                            ring_options(options_, "reduce_scatter", c.seq));
        RG_CUDA_CHECK(
            cudaMemcpyAsync(output.data_ptr(),
                            static_cast<const char*>(scratch.data_ptr()) + rank() * output.nbytes(),
                            output.nbytes(), cudaMemcpyDeviceToDevice, nc.stream()));
      });
}

}  // namespace rg::parallel::mpi
