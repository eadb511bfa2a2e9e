#pragma once
// ThreadGroup: N ranks as N threads of one process, sharing memory. It runs every parallel
// algorithm of ringgrad (DDP, SyncBatchNorm, the sampler) without MPI — in unit tests, and for
// DataParallel on logical CPU devices. Collectives complete before they return (the Work is
// already done); a rank that does not arrive within the timeout makes every waiting rank
// fail with an error naming the operation and the missing ranks.
//
//   auto groups = ThreadGroup::create(4);            // one handle per rank
//   run_ranks(4, [&](int r) { groups[r]->allreduce(t[r], ReduceOp::sum)->wait(); });

#include <functional>
#include <memory>
#include <vector>

#include "parallel/process_group.h"

namespace rg::parallel {

class ThreadGroup final : public ProcessGroup {
 public:
  static std::vector<std::shared_ptr<ThreadGroup>> create(
      int size, std::chrono::milliseconds timeout = std::chrono::seconds(60));

  int rank() const override { return rank_; }
  int size() const override;
  int local_rank() const override { return rank_; }
  int local_size() const override { return size(); }
  std::string backend() const override { return "threads"; }

  std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root) override;
  std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input,
                                       ReduceOp op) override;
  std::shared_ptr<Work> barrier() override;

  struct Shared;  // the rendezvous all ranks meet at

 private:
  ThreadGroup(std::shared_ptr<Shared> shared, int rank) : shared_(std::move(shared)), rank_(rank) {}
  std::shared_ptr<Shared> shared_;
  int rank_;
};

// Runs fn(rank) on `size` threads and joins them; rethrows the first error (by rank).
void run_ranks(int size, const std::function<void(int rank)>& fn);

}  // namespace rg::parallel
