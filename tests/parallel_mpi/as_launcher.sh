#!/usr/bin/env bash
# as_launcher.sh slurm|torchrun PROGRAM [ARGS...]: run under mpirun, starts PROGRAM as another
# launcher would have, so that one machine tests what a cluster does: mpirun's own variables
# (OMPI_COMM_WORLD_*) go, and the other launcher's are set by hand from them. MPI itself still
# joins the ranks through mpirun's PMIx server (PMIX_RANK stays), as it does under
# `srun --mpi=pmix`.
#   slurm     srun over N nodes with one task each: SLURM_PROCID, SLURM_STEP_NUM_TASKS,
#             SLURM_NODEID=rank, SLURM_LOCALID=0, SLURM_STEP_TASKS_PER_NODE="1(xN)" — so every
#             rank must see local rank 0 of 1 (host names alone would say rank of N);
#   torchrun  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE of one machine.
# RG_TEST_EXPECT_* tell tests/parallel_mpi/launcher_test.cpp what the world must be.
set -euo pipefail
mode=$1
shift
rank=${OMPI_COMM_WORLD_RANK:?as_launcher.sh runs under mpirun}
size=${OMPI_COMM_WORLD_SIZE:?}
unset OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK \
  OMPI_COMM_WORLD_LOCAL_SIZE OMPI_COMM_WORLD_NODE_RANK
case $mode in
  slurm)
    export SLURM_PROCID=$rank SLURM_STEP_NUM_TASKS=$size SLURM_NODEID=$rank SLURM_LOCALID=0 \
      SLURM_STEP_TASKS_PER_NODE="1(x$size)"
    export RG_TEST_EXPECT_LAUNCHER=PMIx RG_TEST_EXPECT_LOCAL=0/1 \
      RG_TEST_EXPECT_LOCAL_SOURCE=SLURM_LOCALID ;;
  torchrun)
    export RANK=$rank WORLD_SIZE=$size LOCAL_RANK=$rank LOCAL_WORLD_SIZE=$size
    export RG_TEST_EXPECT_LAUNCHER=PMIx RG_TEST_EXPECT_LOCAL=$rank/$size \
      RG_TEST_EXPECT_LOCAL_SOURCE=LOCAL_RANK ;;
  *) echo "as_launcher.sh: unknown launcher $mode (slurm or torchrun)" >&2; exit 2 ;;
esac
exec "$@"
