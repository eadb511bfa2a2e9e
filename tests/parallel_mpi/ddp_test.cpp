// The data-parallel equivalence tests of tests/parallel/ (there on ranks as threads), here on
// MPI processes: CTest runs this program under mpirun with 1, 2, 3 and 4 ranks. N ranks with
// batch B/N must compute what one process computes with batch B. The checks live in the shared
// bodies of tests/parallel/parallel_test_util.h; a fatal failure there stops the test here.
#include <gtest/gtest.h>

#include "parallel/host_staged_group.h"
#include "parallel/world.h"
#include "tests/parallel/parallel_test_util.h"

namespace rg::parallel {
namespace {
using namespace rg::parallel::testing;

TEST(MpiDataParallel, DdpWithoutBatchNormMatchesOneProcess) {
  ASSERT_NO_FATAL_FAILURE(ddp_matches_one_process(world_ptr(), Norm::none, DType::f64));
}

TEST(MpiDataParallel, DdpWithSyncBatchNormMatchesBatchNormOverTheFullBatch) {
  ASSERT_NO_FATAL_FAILURE(ddp_matches_one_process(world_ptr(), Norm::batch, DType::f64));
}

TEST(MpiDataParallel, NoSyncAccumulationMatchesOneProcess) {
  ASSERT_NO_FATAL_FAILURE(ddp_no_sync_matches_one_process(world_ptr(), DType::f64));
}

TEST(MpiDataParallel, DistributedOptimizerMatchesOneProcess) {
  ASSERT_NO_FATAL_FAILURE(distributed_optimizer_matches_one_process(world_ptr(), 1));
  ASSERT_NO_FATAL_FAILURE(distributed_optimizer_matches_one_process(world_ptr(), 2));
}

// DDP ranks sharing a GPU go through HostStagedGroup (train_cifar --backend mpi); here each
// rank's model and data live on logical device cpu:1, so every bucket and buffer takes the
// same path through host memory, and the MPI engine's asynchronous completion with it.
TEST(MpiDataParallel, DdpStagedThroughHostMemoryMatchesOneProcess) {
  CurrentCpuDevice device(Device::cpu(1));
  auto staged = std::make_shared<HostStagedGroup>(world_ptr());
  ASSERT_NO_FATAL_FAILURE(ddp_matches_one_process(staged, Norm::none, DType::f64));
  ASSERT_NO_FATAL_FAILURE(ddp_matches_one_process(staged, Norm::batch, DType::f64));
}

}  // namespace
}  // namespace rg::parallel
