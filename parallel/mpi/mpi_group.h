#pragma once
// MpiGroup: the ProcessGroup of an MPI job: cpu tensors over MPI, and in CUDA builds cuda
// tensors over NCCL (parallel/nccl/), one GPU per process. Each collective becomes a task on
// the engine's communication thread (parallel/mpi/engine.h) and is numbered: allreduce #1,
// broadcast #2, … — the same numbers on every rank, since every rank issues the same
// collectives in the same order. The number appears in traces and errors and tags the ring's
// messages.
//
// allreduce, allgather and reduce_scatter run either our ring (parallel/ring_allreduce.h) over
// MPI point-to-point messages or MPI's own nonblocking collective (MPI_Iallreduce, …), as
// ProcessGroupOptions::algorithm says; broadcast and barrier are always MPI's (MPI_Ibcast,
// MPI_Ibarrier). Either way the thread polls with a deadline, so nothing waits forever.
//
// A collective on cuda tensors is numbered and checked the same way, and runs from the same
// thread, in the same order: the first one joins the NCCL communicator (bootstrapped over this
// job's MPI); each then waits for the work queued so far on the caller's current stream, runs
// on the communicator's own stream (our ring over ncclSend/ncclRecv, or NCCL's own
// collective), and completes when that stream has finished it — so DDP's bucket allreduces run
// beside the backward pass still being computed. The thread polls NCCL the whole time: it is
// the watchdog that turns a timeout or an NCCL error into the named error.
//
// With check_sequence every collective first sends its description (number, kind, op, count,
// dtype, algorithm) to every other rank on a separate communicator and compares: the first
// difference is reported, the same way on every rank, naming both ranks' calls — and a rank
// that never arrives is named by the timeout.

#include <memory>
#include <mutex>

#include "core/dispatch.h"
#include "parallel/mpi/engine.h"
#include "parallel/process_group.h"

namespace rg::parallel::nccl {
class NcclComm;
}  // namespace rg::parallel::nccl

namespace rg::parallel::mpi {

class MpiGroup final : public ProcessGroup, public std::enable_shared_from_this<MpiGroup> {
 public:
  // Collective: every rank calls it, in the same order. Duplicates MPI_COMM_WORLD twice (data,
  // and the descriptions check_sequence compares), so groups never see each other's messages.
  static std::shared_ptr<MpiGroup> create(Engine& engine, const ProcessGroupOptions& options);

  int rank() const override { return engine_.rank(); }
  int size() const override { return engine_.size(); }
  int local_rank() const override { return engine_.local_rank(); }
  int local_size() const override { return engine_.local_size(); }
  std::string backend() const override { return "mpi"; }
  const ProcessGroupOptions& options() const { return options_; }

  std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root) override;
  std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input,
                                       ReduceOp op) override;
  std::shared_ptr<Work> barrier() override;

  // What a collective is, as sent by check_sequence: plain integers, the same bytes on every
  // rank. Fields a kind does not use are 0.
  enum class Kind : int32_t { allreduce, broadcast, allgather, reduce_scatter, barrier };
  struct Call {
    int64_t seq = 0;
    int64_t count = 0;  // elements per rank
    int32_t kind = 0;
    int32_t op = 0;
    int32_t root = 0;
    int32_t dtype = 0;
    int32_t algorithm = 0;
    int32_t unused = 0;
    bool operator==(const Call&) const = default;
  };
  static std::string describe(const Call& call);  // "allreduce #4 (sum, 1000 x f32, ring)"

 private:
  MpiGroup(Engine& engine, const ProcessGroupOptions& options)
      : engine_(engine), options_(options) {}
  std::shared_ptr<Work> issue(Call call, std::vector<Tensor> keep,
                              std::function<void(const Call&)> body);
  void check_sequence(const Call& call);
  // The collectives per device: OnCuda in parallel/nccl/nccl_collectives.cu (CUDA builds).
  std::shared_ptr<Work> allreduce(OnCpu, const Tensor& tensor, ReduceOp op);
  std::shared_ptr<Work> allreduce(OnCuda, const Tensor& tensor, ReduceOp op);
  std::shared_ptr<Work> broadcast(OnCpu, const Tensor& tensor, int root);
  std::shared_ptr<Work> broadcast(OnCuda, const Tensor& tensor, int root);
  std::shared_ptr<Work> allgather(OnCpu, const Tensor& output, const Tensor& input);
  std::shared_ptr<Work> allgather(OnCuda, const Tensor& output, const Tensor& input);
  std::shared_ptr<Work> reduce_scatter(OnCpu, const Tensor& output, const Tensor& input,
                                       ReduceOp op);
  std::shared_ptr<Work> reduce_scatter(OnCuda, const Tensor& output, const Tensor& input,
                                       ReduceOp op);
  // A collective on cuda tensors of `device`: body runs on the communication thread with the
  // communicator, after the caller's current stream has reached this point.
  std::shared_ptr<Work> issue_cuda(Call call, std::vector<Tensor> keep, int device,
                                   std::function<void(const Call&, nccl::NcclComm&)> body);
  void wait_native(MPI_Request& request, const char* function);
  int tag(const Call& call) const { return static_cast<int>(call.seq & 0x7fff); }

  Engine& engine_;
  ProcessGroupOptions options_;
  MPI_Comm data_ = MPI_COMM_NULL;
  MPI_Comm control_ = MPI_COMM_NULL;
  std::mutex issue_mutex_;  // numbers are taken and tasks queued in one step
  // Made by the first collective on cuda tensors, used only on the communication thread.
  std::shared_ptr<nccl::NcclComm> nccl_;
  int64_t next_seq_ = 1;
  int index_ = 0;  // the engine's number of this group (creation order, the same on every rank)
};

}  // namespace rg::parallel::mpi
