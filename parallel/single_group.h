#pragma once
// SingleGroup: the world of a program started without mpirun — one rank, no MPI. Every
// collective is the identity (a sum over one rank is the tensor itself), checked like the
// others' so that a program that runs here runs under mpirun too.

#include "parallel/process_group.h"

namespace rg::parallel {

class SingleGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string backend() const override { return "single"; }

  std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root) override;
  std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input,
                                       ReduceOp op) override;
  std::shared_ptr<Work> barrier() override;
};

}  // namespace rg::parallel
