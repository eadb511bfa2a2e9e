#pragma once
// ProcessGroup: the ranks of a data-parallel job and the collectives between them. DDP,
// SyncBatchNorm, the distributed sampler and the Horovod-style API are written against this
// interface only, so a backend (MpiGroup: MPI for CPU tensors, NCCL for CUDA tensors;
// ThreadGroup: the device threads of one process; SingleGroup: a world of one) slots in without
// touching them.
//
// Every collective is asynchronous: it is queued on the group's communication thread and
// returns a Work handle; wait() blocks until it is done and rethrows its error. Collectives
// run in the order they were issued, on every rank; issuing them in different orders on
// different ranks is a bug that the debug mode (ProcessGroupOptions::check_sequence) reports.
// Tensors must be contiguous, on a device the backend handles, and must not be touched until
// the Work completes. Reductions are in place.

#include <chrono>
#include <memory>
#include <string>

#include "core/tensor.h"

namespace rg::parallel {

enum class ReduceOp { sum, average, max, min };
// ring: the project's own reduce-scatter + allgather over point-to-point messages;
// native: the backend library's own allreduce (MPI_Allreduce, ncclAllReduce).
enum class AllreduceAlgorithm { ring, native };

struct ProcessGroupOptions {
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::ring;
  // A collective that waits longer ends the job with an error naming the operation and the
  // rank(s) it waited for.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  bool check_sequence = false;  // debug: compare every collective's kind and size across ranks
  int64_t ring_chunk_bytes = 1 << 20;  // the ring pipelines messages of at most this size
};

class Work {
 public:
  virtual ~Work() = default;
  // Blocks until done; rethrows the collective's error (timeout, dead peer, mismatch).
  virtual void wait() = 0;
  virtual bool is_completed() = 0;
};

// A Work that is already done: what backends return for collectives that complete before
// they return (the single-rank world, ranks as threads).
class CompletedWork final : public Work {
 public:
  void wait() override {}
  bool is_completed() override { return true; }
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // rank among the processes of this machine
  virtual int local_size() const = 0;
  virtual std::string backend() const = 0;  // "mpi", "nccl", "threads", "single"

  virtual std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op) = 0;
  virtual std::shared_ptr<Work> broadcast(const Tensor& tensor, int root) = 0;
  // output: (size · n) elements, rank r's input lands at [r·n, (r+1)·n).
  virtual std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input) = 0;
  // input: (size · n) elements; rank r receives the reduction of every rank's slice r.
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input,
                                               ReduceOp op) = 0;
  virtual std::shared_ptr<Work> barrier() = 0;
};

}  // namespace rg::parallel
