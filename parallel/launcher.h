#pragma once
// Which launcher started this process, and what it says about the job: rank, size, and the
// rank and count of the processes on this machine (local rank: which GPU to take). A pure
// function of the environment variables, so every launcher is tested without starting one.
//
// ringgrad's ranks always meet through MPI (parallel/mpi/engine.h): the launcher must be one
// MPI can join — mpirun, or srun with Slurm's PMIx/PMI plugin. The variables only say that the
// process was launched so (start MPI, not a world of one), cross-check MPI's own rank and size,
// and give the local rank where MPI has none.
//
// Precedence, first match wins for the rank and size (the most specific launcher first; an
// outer scheduler's variables are inherited by whatever runs inside it — mpirun in an sbatch
// script sees the batch step's SLURM_PROCID=0 in every rank — so they must lose):
//   1. Open MPI's mpirun     OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
//   2. PMIx                  PMIX_RANK (srun --mpi=pmix, Open MPI 5's mpirun); no size variable
//   3. PMI                   PMI_RANK, PMI_SIZE (MPICH's Hydra mpiexec, srun --mpi=pmi2), with
//                            Hydra's MPI_LOCALRANKID, MPI_LOCALNRANKS
//   4. a Slurm job step      SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, and the local
//                            size from SLURM_STEP_TASKS_PER_NODE ("2(x3),1") at SLURM_NODEID.
//                            SLURM_STEP_NUM_TASKS is set by srun only, so a program run
//                            directly in an sbatch script (SLURM_PROCID=0 there too) is not
//                            mistaken for a task of a step.
//   5. torchrun-style        RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (both RANK and
//                            WORLD_SIZE needed: RANK alone is too common a name)
// The local rank and size come from the first of the same list that has them, so srun with
// PMIx takes its rank from PMIX_RANK and its local rank from SLURM_LOCALID. Where no launcher
// gives a local rank, MPI's engine compares host names.

#include <map>
#include <string>

namespace rg::parallel {

enum class Launcher { none, open_mpi, pmix, pmi, slurm, torchrun };

// "Open MPI's mpirun (OMPI_COMM_WORLD_*)", ...: for messages.
std::string launcher_name(Launcher launcher);

struct LaunchInfo {
  Launcher launcher = Launcher::none;
  int rank = 0;
  int size = 1;         // -1: the launcher does not say (PMIx)
  int local_rank = -1;  // -1: no launcher says (compare host names)
  int local_size = -1;
  std::string local_source;  // the variable the local rank came from, for messages

  // Whether to start the MPI backend: an MPI launcher, or srun / a torchrun-style launcher
  // announcing more than one process.
  bool mpi_launched() const;
};

using Environment = std::map<std::string, std::string>;

// Reads the launch from `env`. Throws rg::Error naming the variable when one that is set is not
// a non-negative integer, or when a rank is not below its size.
LaunchInfo detect_launch(const Environment& env);

// The process's environment, for detect_launch.
Environment process_environment();

// "2(x3),1" at node 3 -> 1: Slurm's compressed tasks-per-node list. -1 when `node` is past its
// end; throws rg::Error naming the text when it is malformed.
int slurm_tasks_on_node(const std::string& tasks_per_node, int node);

// After MPI has started: throws a clear rg::Error when the launcher's rank or size disagree
// with MPI's — most often a launcher MPI could not join (srun without --mpi=pmix, torchrun),
// which leaves every process a world of one training alone.
void check_launch_matches_mpi(const LaunchInfo& launch, int mpi_rank, int mpi_size);

}  // namespace rg::parallel
