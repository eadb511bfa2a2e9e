#pragma once
// NcclComm: one NCCL communicator over the ranks of an MPI job, one GPU per process, and the
// stream its collectives run on. CUDA builds only; MpiGroup hands it the collectives on cuda
// tensors (parallel/nccl/nccl_collectives.cu).
//
// Bootstrap over MPI, as llm.c does: rank 0 makes the unique id (ncclGetUniqueId), MPI_Bcast
// gives its bytes to every rank, and each rank joins with ncclCommInitRankConfig.
//
// The communicator is non-blocking (ncclConfig_t::blocking = 0): NCCL calls return at once,
// possibly with ncclInProgress, and nothing inside NCCL can stall the process. The engine's
// communication thread then polls — ncclCommGetAsyncError for NCCL's own failures, a CUDA
// event for completion, the clock and the peers' processes (Engine::wait_until) — which makes
// it the watchdog PyTorch runs as a separate thread (its logic: watchdog.h, tested against a
// fake communicator): a timeout, a dead peer or an asynchronous error aborts the communicator
// (ncclCommAbort) and becomes the same named rg::Error the MPI backend gives, which ends the
// job as ProcessGroupOptions/OnFault say.

#include <mpi.h>
#include <nccl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "parallel/mpi/engine.h"
#include "parallel/nccl/watchdog.h"

// Checks an NCCL call: on failure an rg::Error naming the call, `what`, NCCL's error string and
// its last error message (which says, e.g., that the driver is missing).
#define RG_NCCL_CHECK(call, ...)                                                                   \
  do {                                                                                             \
    const ncclResult_t rg_nccl_status_ = (call);                                                   \
    if (rg_nccl_status_ != ncclSuccess && rg_nccl_status_ != ncclInProgress) [[unlikely]] {        \
      ::rg::fail(__VA_ARGS__, ": ", #call, " failed: ", ncclGetErrorString(rg_nccl_status_), " (", \
                 ncclGetLastError(nullptr), ")");                                                  \
    }                                                                                              \
  } while (0)

namespace rg::parallel::nccl {

using std::chrono::milliseconds;

// On the engine's thread, collective over `comm`: rank 0's ncclGetUniqueId, broadcast to all.
ncclUniqueId share_unique_id(mpi::Engine& engine, MPI_Comm comm, milliseconds timeout);

ncclDataType_t nccl_type(DType dtype);

class NcclComm : private Watched {
 public:
  // On the engine's thread, collective over `comm` (whose ranks are NCCL's ranks): checks that
  // no two ranks share a GPU (NCCL refuses them: check_one_rank_per_gpu, gpu_placement.h),
  // joins the communicator on `device` and creates its stream. Throws a clear error where no
  // GPU is usable or two ranks share one, on every rank.
  static std::unique_ptr<NcclComm> create(mpi::Engine& engine, MPI_Comm comm, int device,
                                          milliseconds timeout);
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }

  // Polls until NCCL has finished queueing the last call (non-blocking calls may return
  // ncclInProgress). Throws, after aborting the communicator, on an error or a timeout.
  void wait_queued(const std::function<std::string()>& what);
  // Polls until all work queued on the stream has run: the watchdog (see above).
  void wait_done(const std::function<std::string()>& what);

 private:
  NcclComm(mpi::Engine& engine, int device, milliseconds timeout);
  // Watched: what the watchdog polls and aborts.
  CommState state(std::string& error) override;
  void abort() override;

  int device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  Watchdog watchdog_;
};

}  // namespace rg::parallel::nccl
