#pragma once
// The world: every process of a data-parallel job, as Horovod and torch.distributed see it,
// and the default group of DDP, SyncBatchNorm and the Horovod-style API.
//
//   rg::parallel::init();                                // once, at the start of main
//   model.to(Device::cuda(rg::parallel::local_rank()));  // one device per process
//   if (rg::parallel::rank() == 0) log(...);
//
// Launched by mpirun (scripts/mpirun.sh N ./prog …) the world is an MPI job: N processes, one
// communication thread each (parallel/mpi/). Started without a launcher it is a world of size 1
// (backend "single") where every collective is the identity, so the same program runs anywhere.
// The environment variable RG_BACKEND=mpi|single overrides the choice. Tests that run ranks as
// threads of one process install a ThreadGroup per thread with ScopedThreadWorld.
//
// Faults — a collective that waits longer than ProcessGroupOptions::timeout, a rank that
// dies, ranks that call different collectives (check_sequence) — make Work::wait() throw an
// rg::Error naming the operation and the ranks. The error is also printed at once (rank and
// message on stderr), and the group stays broken: every later collective fails with it.

#include <memory>

#include "parallel/process_group.h"

namespace rg::parallel {

// What else happens on a fault, besides the error thrown by Work::wait().
// abort_job: after a grace period (so the other ranks can print their own diagnosis too) the
//   rank calls MPI_Abort, which ends every process of the job — no rank waits forever for a
//   peer that will never come. The default, and what training wants.
// throw_error: nothing else; the program decides (tests that inspect the error use this).
enum class OnFault { abort_job, throw_error };

// Starts the world once and installs it (set_world); later calls return the same group
// (their options are ignored). Under a ScopedThreadWorld it returns that thread's group.
std::shared_ptr<ProcessGroup> init(const ProcessGroupOptions& options = {},
                                   OnFault on_fault = OnFault::abort_job);

// Installs a process-wide world made elsewhere (replacing any earlier one; nullptr uninstalls).
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

// A new group of all the world's ranks with its own options and its own message space (an
// MPI_Comm_dup): collectives of different groups never mix. Every rank must call it, in the
// same order relative to other collectives. Used to compare algorithms side by side.
std::shared_ptr<ProcessGroup> new_group(const ProcessGroupOptions& options);

// The world's coordinates; throw before a world exists.
int rank();
int size();
int local_rank();  // among the processes of this machine: which GPU to take
int local_size();

// For a rank whose program stops on an error of its own, outside any collective (a GPU it does
// not have, a file it cannot read, a bug): under mpirun the other ranks would wait for it in
// their next collective until the timeout (300 s by default) while it waits for them in
// shutdown's barrier. This ends the whole job at once instead (MPI_Abort), printing `reason`
// with the rank. In a world of one process, or of threads, it does nothing: returning the
// error is enough there. Program mains call it after printing their error.
void end_job_after_error(const std::string& reason);

// Lets queued collectives finish, then ends MPI (after a barrier that notices dead peers).
// Runs by itself at exit; calling it earlier is allowed, and so is calling it twice.
// A rank that leaves — here, at exit (main returned, exit() called) or by an exception out of
// the program — first tells the others how it left and how many collectives it completed
// (parallel/mpi/departures.h): a rank waiting for it in a later collective fails within 50 ms,
// naming it ("rank 0 left the job (its program returned) after 3 collectives; rank 1 waits in
// allreduce #4"), instead of both waiting out the timeout; and a rank that fails tells the
// ranks waiting for it in this barrier, which then end too.
void shutdown();

}  // namespace rg::parallel
