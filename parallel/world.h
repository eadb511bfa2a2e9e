#pragma once
// The world: the process group every rank of the job belongs to, as Horovod's hvd.init()
// sets it up. Whoever creates the job's group installs it here — the MPI backend's init()
// (one process per rank, under mpirun; a world of size 1 without it), or a test running N
// ranks as threads — and the Horovod-style API (parallel/horovod.h), DDP and SyncBatchNorm
// take it as their default group.
//
//   set_world(group);                     // once per process (MPI's init() does this)
//   ScopedThreadWorld w(groups[r]);       // ranks as threads: one world per thread
//   if (rank() == 0) save_checkpoint(...);
//
// That is all of it: two ways to install a group and five accessors.

#include <memory>

#include "parallel/process_group.h"

namespace rg::parallel {

// Installs the process-wide world (replacing any earlier one; nullptr uninstalls it).
void set_world(std::shared_ptr<ProcessGroup> group);

// Makes `group` this thread's world while it lives — over the process-wide one — for ranks
// that are threads of one process (ThreadGroup). Nests; restores the previous one.
class ScopedThreadWorld {
 public:
  explicit ScopedThreadWorld(std::shared_ptr<ProcessGroup> group);
  ~ScopedThreadWorld();
  ScopedThreadWorld(const ScopedThreadWorld&) = delete;
  ScopedThreadWorld& operator=(const ScopedThreadWorld&) = delete;

 private:
  std::shared_ptr<ProcessGroup> previous_;
};

bool has_world();
// This thread's world, else the process-wide one; an error naming init() when neither is set.
std::shared_ptr<ProcessGroup> world_ptr();
ProcessGroup& world();
int rank();
int size();
int local_rank();  // rank on this machine: which GPU to use
int local_size();

}  // namespace rg::parallel
