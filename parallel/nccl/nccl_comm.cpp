#include "parallel/nccl/nccl_comm.h"

#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "core/cuda/cuda_check.h"
#include "core/cuda/stream.h"
#include "parallel/gpu_placement.h"
#include "parallel/mpi/mpi_check.h"

namespace rg::parallel::nccl {

ncclUniqueId share_unique_id(mpi::Engine& engine, MPI_Comm comm, milliseconds timeout) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  int rank = 0;
  RG_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  // ncclGetUniqueId needs no GPU: it only opens the bootstrap socket rank 0 will listen on.
  if (rank == 0) RG_NCCL_CHECK(ncclGetUniqueId(&id), "NCCL bootstrap on rank 0");
  MPI_Request request = MPI_REQUEST_NULL;
  RG_MPI_CHECK(MPI_Ibcast(&id, sizeof(id), MPI_BYTE, 0, comm, &request));
  engine.wait_request(request, timeout, [] {
    return std::string("rank 0's NCCL unique id (MPI_Ibcast in the NCCL bootstrap)");
  });
  return id;
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::i64:
      return ncclInt64;
    case DType::u8:
      return ncclUint8;
  }
  fail("nccl: invalid dtype ", static_cast<int>(dtype));
}

NcclComm::NcclComm(mpi::Engine& engine, int device, milliseconds timeout)
    : device_(device),
      watchdog_(
          *this,
          [&engine](const std::function<bool()>& done, milliseconds limit,
                    const std::function<std::string()>& what) {
            engine.wait_until(done, limit, what);
          },
          timeout) {}

std::unique_ptr<NcclComm> NcclComm::create(mpi::Engine& engine, MPI_Comm comm, int device,
                                           milliseconds timeout) {
  int rank = 0, size = 1;
  RG_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  RG_MPI_CHECK(MPI_Comm_size(comm, &size));
  // Every rank takes part in these exchanges before anything that can fail on one rank only
  // (no GPU here, a bad device there), so no rank is left waiting in MPI; and every rank
  // learns where the others are, so that two ranks on one GPU get the same clear error on
  // every rank before NCCL is called (NCCL would stop with "Duplicate GPU detected").
  std::vector<GpuPlacement> placements(static_cast<std::size_t>(size));
  const GpuPlacement mine{.rank = rank, .host = engine.host_of(rank), .device = device};
  MPI_Request request = MPI_REQUEST_NULL;
  RG_MPI_CHECK(MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, placements.data(), sizeof mine,
                              MPI_BYTE, comm, &request));
  engine.wait_request(request, timeout, [] {
    return std::string("every rank's GPU (MPI_Iallgather before the NCCL bootstrap)");
  });
  const ncclUniqueId id = share_unique_id(engine, comm, timeout);
  check_one_rank_per_gpu(placements);
  std::unique_ptr<NcclComm> nccl(new NcclComm(engine, device, timeout));
  cuda::DeviceGuard guard(device);  // the clear "no usable GPU" error where there is none
  RG_CUDA_CHECK(cudaStreamCreateWithFlags(&nccl->stream_, cudaStreamNonBlocking));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  RG_NCCL_CHECK(ncclCommInitRankConfig(&nccl->comm_, size, id, rank, &config),
                "NCCL communicator of rank ", rank, " of ", size, " on cuda:", device);
  nccl->wait_queued([&] {
    return "every rank to join the NCCL communicator (ncclCommInitRankConfig, rank " +
           std::to_string(rank) + " of " + std::to_string(size) + ")";
  });
  return nccl;
}

NcclComm::~NcclComm() {
  // A healthy communicator is finalised by destroying it after its work (the engine drains
  // its queue first); an aborted one is already gone.
  if (comm_ && !watchdog_.aborted()) ncclCommDestroy(comm_);
  if (stream_) RG_CUDA_WARN(cudaStreamDestroy(stream_));
}

CommState NcclComm::state(std::string& error) {
  ncclResult_t result = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &result) != ncclSuccess) result = ncclInternalError;
  if (result == ncclSuccess) return CommState::ok;
  if (result == ncclInProgress) return CommState::in_progress;
  error = std::string(ncclGetErrorString(result)) + " (" + ncclGetLastError(comm_) + ")";
  return CommState::failed;
}

void NcclComm::abort() {
  if (comm_) ncclCommAbort(comm_);
}

void NcclComm::wait_queued(const std::function<std::string()>& what) {
  watchdog_.wait(Until::queued, what);
}

void NcclComm::wait_done(const std::function<std::string()>& what) {
  cudaEvent_t done = nullptr;
  RG_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  struct Destroy {
    cudaEvent_t event;
    ~Destroy() { RG_CUDA_WARN(cudaEventDestroy(event)); }
  } destroy{done};
  RG_CUDA_CHECK(cudaEventRecord(done, stream_));
  watchdog_.wait(Until::finished, what, [&] {
    const cudaError_t query = cudaEventQuery(done);
    if (query == cudaErrorNotReady) return false;
    RG_CUDA_CHECK(query);
    return true;
  });
}

}  // namespace rg::parallel::nccl
