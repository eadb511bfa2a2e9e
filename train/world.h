#pragma once
// The machine a run trains on: the world of processes (MPI under mpirun, one process without),
// the compute threads of each, and the device each process takes.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "parallel/process_group.h"

namespace rg::train {

struct WorldOptions {
  parallel::AllreduceAlgorithm allreduce = parallel::AllreduceAlgorithm::ring;
  int64_t threads = 0;  // compute threads per process; 0: the cores shared among local processes
  // How long a collective waits for a peer before it fails naming the ranks it waited for.
  std::chrono::milliseconds collective_timeout{std::chrono::seconds(300)};
  bool check_sequence = false;  // debug: compare every collective's kind and size across ranks
};

// Joins the world with the chosen allreduce, and shares this machine's cores among its
// processes unless `threads` says otherwise.
std::shared_ptr<parallel::ProcessGroup> join_world(const WorldOptions& options);

// The device a process trains on: `device_flag` as given, except a bare "cuda" under mpirun,
// where each process takes the GPU of its rank on its host (cuda:<local_rank>), one GPU per
// process as Horovod's recipe pins it. "cuda:N" is taken as given on every process.
Device training_device(const std::string& device_flag, int local_rank, int local_size);

// How the processes of a job reduce the gradients of GPU tensors:
//   nccl  NCCL (our ring over ncclSend/ncclRecv, or ncclAllReduce): one GPU per rank;
//   mpi   the MPI group, the tensors staged through host memory (parallel/host_staged_group.h):
//         ranks may share a GPU — DDP tested on a one-GPU machine; not fast.
// cpu tensors always travel over MPI. "auto": nccl.
enum class GpuBackend { nccl, mpi };
GpuBackend parse_gpu_backend(const std::string& text);  // "auto", "nccl" or "mpi"
std::string gpu_backend_name(GpuBackend backend);

struct RankPlacement {
  std::string device_flag;  // cpu, cpu:N, cuda or cuda:N
  int local_rank = 0, local_size = 1;
  int gpu_count = 0;  // GPUs of this machine (cuda_device_count())
  GpuBackend backend = GpuBackend::nccl;
};

// The device of a process, by local rank × GPUs, decided before any GPU or NCCL call:
//   - cpu flags, and any flag in a process alone on its machine: as given ("cuda" = cuda:0);
//   - "cuda" under mpirun: nccl → cuda:<local rank>, one GPU per process; mpi → cuda:<local rank
//     mod GPUs>, so ranks share GPUs when there are fewer GPUs than ranks;
//   - "cuda:N" under mpirun: mpi → cuda:N on every local rank; nccl → refused.
// Two ranks on one GPU under nccl — more local ranks than GPUs, or one cuda:N for all — are a
// clear error naming --backend mpi (NCCL itself would fail with "Duplicate GPU detected").
Device rank_device(const RankPlacement& placement);

// The group DDP, SyncBatchNorm and the found-inf exchange use for tensors on `device`: the
// world itself, or — GpuBackend::mpi, a cuda device, several processes — the world with GPU
// tensors staged through host memory. GpuBackend only matters on GPUs.
std::shared_ptr<parallel::ProcessGroup> gradient_group(
    std::shared_ptr<parallel::ProcessGroup> world, const Device& device, GpuBackend backend);

// DataParallel's devices. `list` ("cuda:0,cuda:0", "cpu:0,cpu:1"; empty: none given) names them
// one per replica — its first is then the training device, whatever --device says; else `dp`
// replicas on the kind of `device_flag`: cpu:0..dp-1, or cuda:<i mod GPUs> — as many GPUs as
// the machine has, then replicas share them (--dp 2 --device cuda on a one-GPU machine:
// cuda:0, cuda:0). A list of two kinds, or whose size disagrees with a non-zero `dp`, is an
// error.
std::vector<Device> data_parallel_devices(const std::string& device_flag, int dp,
                                          const std::string& list, int gpu_count);

// Whether two replicas would run on one device.
bool shares_a_device(const std::vector<Device>& devices);

}  // namespace rg::train
