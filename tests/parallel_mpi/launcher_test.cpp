// The world's rank, size and local rank are what the launcher said (parallel/launcher.h):
// under plain mpirun (CTest's parallel_mpi.np*), and under mpirun with srun's or torchrun's
// variables set by hand in place of mpirun's own (parallel_mpi.launch_as_*, through
// as_launcher.sh, which also says what to expect in RG_TEST_EXPECT_*).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "parallel/launcher.h"
#include "parallel/world.h"

namespace rg::parallel {
namespace {

TEST(Launch, TheWorldIsWhatTheLauncherSaid) {
  const LaunchInfo launch = detect_launch(process_environment());
  if (launch.launcher == Launcher::none) {
    EXPECT_EQ(size(), 1);
    EXPECT_EQ(local_rank(), 0);
    return;
  }
  EXPECT_EQ(rank(), launch.rank);
  if (launch.size > 0) {
    EXPECT_EQ(size(), launch.size);
  }
  if (launch.local_rank >= 0) {
    EXPECT_EQ(local_rank(), launch.local_rank);
  }
  if (launch.local_size > 0) {
    EXPECT_EQ(local_size(), launch.local_size);
  }
  if (const char* want = std::getenv("RG_TEST_EXPECT_LAUNCHER")) {
    EXPECT_NE(launcher_name(launch.launcher).find(want), std::string::npos)
        << launcher_name(launch.launcher);
  }
  if (const char* want = std::getenv("RG_TEST_EXPECT_LOCAL")) {
    EXPECT_EQ(std::to_string(local_rank()) + "/" + std::to_string(local_size()), want);
    EXPECT_EQ(launch.local_source, std::getenv("RG_TEST_EXPECT_LOCAL_SOURCE"));
  }
}

}  // namespace
}  // namespace rg::parallel
