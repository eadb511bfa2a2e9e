// The NCCL backend's bootstrap over MPI (parallel/nccl/nccl_comm.h), under mpirun with CPU
// ranks: ncclGetUniqueId and the id's broadcast need no GPU, so they are checked here; joining
// the communicator needs one, so without a GPU every rank must get the same clear error (and
// no rank may hang waiting for another). CUDA builds only.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/device.h"
#include "parallel/mpi/engine.h"
#include "parallel/mpi/mpi_check.h"
#include "parallel/nccl/nccl_comm.h"
#include "parallel/world.h"

namespace rg::parallel {
namespace {

using std::chrono::seconds;

mpi::Engine* engine_or_skip() {
  return mpi::Engine::instance();
}

TEST(NcclBootstrap, EveryRankGetsRankZerosUniqueId) {
  mpi::Engine* engine = engine_or_skip();
  if (!engine) GTEST_SKIP() << "no MPI world (run under mpirun or with RG_BACKEND=mpi)";
  std::vector<char> all;
  ncclUniqueId id;
  engine->run([&] {
    id = nccl::share_unique_id(*engine, MPI_COMM_WORLD, seconds(20));
    all.resize(sizeof(id) * static_cast<std::size_t>(engine->size()));
    RG_MPI_CHECK(
        MPI_Allgather(&id, sizeof(id), MPI_BYTE, all.data(), sizeof(id), MPI_BYTE, MPI_COMM_WORLD));
  });
  const std::vector<char> zeros(sizeof(id), 0);
  EXPECT_NE(std::memcmp(&id, zeros.data(), sizeof(id)), 0) << "rank 0 made no id";
  for (int r = 0; r < engine->size(); ++r)
    EXPECT_EQ(std::memcmp(all.data() + r * sizeof(id), &id, sizeof(id)), 0)
        << "rank " << r << " got a different id";
}

TEST(NcclBootstrap, WithoutAGpuEveryRankGetsAClearError) {
  mpi::Engine* engine = engine_or_skip();
  if (!engine) GTEST_SKIP() << "no MPI world (run under mpirun or with RG_BACKEND=mpi)";
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  std::string message;
  engine->run([&] {
    try {
      nccl::NcclComm::create(*engine, MPI_COMM_WORLD, engine->local_rank(), seconds(20));
    } catch (const Error& e) {
      message = e.what();
    }
  });
  EXPECT_NE(message.find("no usable GPU"), std::string::npos) << message;
}

}  // namespace
}  // namespace rg::parallel
