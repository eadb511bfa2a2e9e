#pragma once
// HostStagedGroup: a ProcessGroup that carries device tensors through host memory. Each
// collective on a tensor that is not in the host's own memory (a GPU's, or a logical cpu:N
// device's) copies it into a host buffer — pinned for a GPU — on the calling thread, runs the
// inner group's collective on the buffer, and copies the result back when the work is waited
// for. Host tensors (cpu:0) go to the inner group unchanged.
//
// What it is for: DDP ranks that share one GPU (train_cifar --backend mpi). NCCL refuses two
// ranks of one communicator on one GPU (gpu_placement.h), so on a one-GPU machine the ranks'
// gradients travel through the MPI group instead — our ring or MPI's own allreduce over host
// memory — while SyncBatchNorm, whose exchanged statistics are host tensors already, runs
// unchanged on cuda tensors. It proves DDP on one GPU; it is not fast: every bucket crosses
// PCIe twice, and the calling thread waits for each copy to the host.
//
// Order on a GPU, correct by construction:
//   - the copy to the host is synchronous on the caller's current stream: it holds everything
//     the caller queued before the collective (the gradients of a bucket);
//   - the copy back runs in wait() (or in the first is_completed() that returns true), on the
//     waiting thread's current stream, after the inner collective has finished: work the
//     caller queues after wait() sees the result, as the ProcessGroup contract promises.
// The logical cpu devices take the same path, which is how the tests run it without a GPU.

#include <memory>

#include "parallel/process_group.h"

namespace rg::parallel {

class HostStagedGroup final : public ProcessGroup {
 public:
  explicit HostStagedGroup(std::shared_ptr<ProcessGroup> inner);

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int local_rank() const override { return inner_->local_rank(); }
  int local_size() const override { return inner_->local_size(); }
  // "mpi+host": the inner backend, device tensors through host memory.
  std::string backend() const override { return inner_->backend() + "+host"; }
  const std::shared_ptr<ProcessGroup>& inner() const { return inner_; }

  std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root) override;
  std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input,
                                       ReduceOp op) override;
  std::shared_ptr<Work> barrier() override { return inner_->barrier(); }

 private:
  std::shared_ptr<ProcessGroup> inner_;
};

}  // namespace rg::parallel
