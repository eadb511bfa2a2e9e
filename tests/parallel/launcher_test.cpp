#include "parallel/launcher.h"

#include <gtest/gtest.h>

#include "tests/support/fixtures.h"

namespace rg::parallel {
namespace {
using rg::testing::throws_error;

TEST(Launcher, NoVariablesIsNoLauncher) {
  const LaunchInfo info = detect_launch({{"PATH", "/bin"}, {"HOME", "/root"}});
  EXPECT_EQ(info.launcher, Launcher::none);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.size, 1);
  EXPECT_EQ(info.local_rank, -1);
  EXPECT_FALSE(info.mpi_launched());
}

TEST(Launcher, OpenMpisMpirun) {
  const LaunchInfo info = detect_launch({{"OMPI_COMM_WORLD_RANK", "5"},
                                         {"OMPI_COMM_WORLD_SIZE", "8"},
                                         {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                                         {"PMIX_RANK", "5"}});
  EXPECT_EQ(info.launcher, Launcher::open_mpi);
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_size, 4);
  EXPECT_EQ(info.local_source, "OMPI_COMM_WORLD_LOCAL_RANK");
  EXPECT_TRUE(info.mpi_launched());
}

// mpirun inside an sbatch script: every rank inherits the batch step's SLURM_PROCID=0 and
// SLURM_LOCALID=0; mpirun's own variables must win.
TEST(Launcher, MpirunInsideAnSbatchScriptIgnoresTheBatchStep) {
  const LaunchInfo info = detect_launch({{"SLURM_PROCID", "0"},
                                         {"SLURM_LOCALID", "0"},
                                         {"SLURM_NTASKS", "8"},
                                         {"SLURM_STEP_NUM_TASKS", "1"},
                                         {"OMPI_COMM_WORLD_RANK", "3"},
                                         {"OMPI_COMM_WORLD_SIZE", "8"},
                                         {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(info.launcher, Launcher::open_mpi);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.local_rank, 3);
  EXPECT_EQ(info.local_size, 4);
}

// srun --mpi=pmix: the rank from PMIx (which has no size variable), the local rank and size
// from Slurm's.
TEST(Launcher, SrunWithPmixTakesTheLocalRankFromSlurm) {
  const LaunchInfo info = detect_launch({{"PMIX_RANK", "6"},
                                         {"SLURM_PROCID", "6"},
                                         {"SLURM_STEP_NUM_TASKS", "8"},
                                         {"SLURM_LOCALID", "2"},
                                         {"SLURM_NODEID", "1"},
                                         {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"}});
  EXPECT_EQ(info.launcher, Launcher::pmix);
  EXPECT_EQ(info.rank, 6);
  EXPECT_EQ(info.size, -1);
  EXPECT_EQ(info.local_rank, 2);
  EXPECT_EQ(info.local_size, 4);
  EXPECT_EQ(info.local_source, "SLURM_LOCALID");
  EXPECT_TRUE(info.mpi_launched());
}

TEST(Launcher, SrunWithoutAnMpiPluginIsASlurmStep) {
  const LaunchInfo info = detect_launch({{"SLURM_PROCID", "4"},
                                         {"SLURM_STEP_NUM_TASKS", "5"},
                                         {"SLURM_LOCALID", "0"},
                                         {"SLURM_NODEID", "2"},
                                         {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"}});
  EXPECT_EQ(info.launcher, Launcher::slurm);
  EXPECT_EQ(info.rank, 4);
  EXPECT_EQ(info.size, 5);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.local_size, 1);
  EXPECT_TRUE(info.mpi_launched());
  // srun -n 1: one process needs no MPI.
  EXPECT_FALSE(
      detect_launch({{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}}).mpi_launched());
}

// A program run directly in an sbatch script sees SLURM_PROCID=0 and SLURM_NTASKS but no step:
// one process, no launcher.
TEST(Launcher, ABatchScriptAloneIsNotAStep) {
  const LaunchInfo info = detect_launch({{"SLURM_PROCID", "0"},
                                         {"SLURM_NTASKS", "8"},
                                         {"SLURM_LOCALID", "0"},
                                         {"SLURM_JOB_ID", "7"}});
  EXPECT_EQ(info.launcher, Launcher::none);
  EXPECT_FALSE(info.mpi_launched());
}

TEST(Launcher, MpichsHydra) {
  const LaunchInfo info = detect_launch(
      {{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "1"}});
  EXPECT_EQ(info.launcher, Launcher::pmi);
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.size, 3);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.local_size, 1);
}

TEST(Launcher, TorchrunStyleNeedsRankAndWorldSize) {
  const LaunchInfo info = detect_launch(
      {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}});
  EXPECT_EQ(info.launcher, Launcher::torchrun);
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_size, 2);
  // RANK alone is too common a name to mean a launcher.
  EXPECT_EQ(detect_launch({{"RANK", "3"}}).launcher, Launcher::none);
  // Under mpirun, a LOCAL_RANK set by the job's own script still counts where mpirun's is
  // missing (here: mpirun's variables removed, as tests/parallel_mpi/as_launcher.sh does).
  const LaunchInfo mixed = detect_launch({{"PMIX_RANK", "0"}, {"LOCAL_RANK", "0"}});
  EXPECT_EQ(mixed.launcher, Launcher::pmix);
  EXPECT_EQ(mixed.local_source, "LOCAL_RANK");
}

TEST(Launcher, BadValuesAreNamedErrors) {
  EXPECT_TRUE(throws_error(
      [] {
        detect_launch({{"OMPI_COMM_WORLD_RANK", "two"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
      },
      {"OMPI_COMM_WORLD_RANK='two'", "not a non-negative integer"}));
  EXPECT_TRUE(throws_error(
      [] {
        detect_launch({{"PMI_RANK", "-1"}, {"PMI_SIZE", "4"}});
      },
      {"PMI_RANK='-1'"}));
  EXPECT_TRUE(throws_error(
      [] {
        detect_launch({{"PMI_RANK", "4"}, {"PMI_SIZE", "4"}});
      },
      {"PMI_RANK=4 is not below PMI_SIZE=4"}));
  EXPECT_TRUE(throws_error(
      [] {
        detect_launch({{"RANK", "0"}, {"WORLD_SIZE", "0"}});
      },
      {"WORLD_SIZE=0"}));
  EXPECT_TRUE(throws_error(
      [] {
        detect_launch({{"OMPI_COMM_WORLD_RANK", "0"},
                       {"OMPI_COMM_WORLD_SIZE", "4"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
      },
      {"OMPI_COMM_WORLD_LOCAL_RANK=2 is not below the 2 processes"}));
  EXPECT_TRUE(throws_error(
      [] {
        detect_launch({{"SLURM_PROCID", "0"},
                       {"SLURM_STEP_NUM_TASKS", "2"},
                       {"SLURM_LOCALID", "0"},
                       {"SLURM_STEP_TASKS_PER_NODE", "2(x"}});
      },
      {"SLURM_STEP_TASKS_PER_NODE='2(x'"}));
  // A value too large for an int is not silently wrapped.
  EXPECT_TRUE(throws_error(
      [] {
        detect_launch({{"PMIX_RANK", "99999999999999999999"}});
      },
      {"PMIX_RANK="}));
}

TEST(Launcher, SlurmTasksPerNode) {
  EXPECT_EQ(slurm_tasks_on_node("4", 0), 4);
  EXPECT_EQ(slurm_tasks_on_node("4", 1), -1);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 0), 2);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 3), 1);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 4), -1);
  EXPECT_EQ(slurm_tasks_on_node("1,3(x2)", 2), 3);
  for (const char* bad : {"x", "2(3)", "2(x0)", "2(x3", "2,", ",2", "2(x3)1", "-1"})
    EXPECT_TRUE(throws_error([&] { slurm_tasks_on_node(bad, 0); }, {"SLURM_STEP_TASKS_PER_NODE"}))
        << bad;
}

TEST(Launcher, AMismatchWithMpiNamesTheLauncherAndTheFix) {
  LaunchInfo srun;
  srun.launcher = Launcher::slurm;
  srun.rank = 1;
  srun.size = 4;
  EXPECT_TRUE(
      throws_error([&] { check_launch_matches_mpi(srun, 0, 1); },
                   {"Slurm's srun", "rank 1 of 4", "MPI sees rank 0 of 1", "srun --mpi=pmix"}));
  LaunchInfo torchrun = srun;
  torchrun.launcher = Launcher::torchrun;
  EXPECT_TRUE(throws_error([&] { check_launch_matches_mpi(torchrun, 0, 1); },
                           {"torchrun-style", "cannot join", "mpirun -np N"}));
  EXPECT_TRUE(
      throws_error([&] { check_launch_matches_mpi(srun, 1, 2); }, {"disagree", "one launcher"}));
  check_launch_matches_mpi(srun, 1, 4);  // agrees: no error
  LaunchInfo pmix;
  pmix.launcher = Launcher::pmix;
  pmix.rank = 3;
  pmix.size = -1;
  check_launch_matches_mpi(pmix, 3, 8);  // PMIx says no size: the rank alone is compared
  check_launch_matches_mpi(LaunchInfo{}, 0, 1);
}

}  // namespace
}  // namespace rg::parallel
