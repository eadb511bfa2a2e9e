#pragma once
// The machine a run trains on: the world of processes (MPI under mpirun, one process without),
// the compute threads of each, and the device each process takes.

#include <chrono>
#include <memory>
#include <string>

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

}  // namespace rg::train
