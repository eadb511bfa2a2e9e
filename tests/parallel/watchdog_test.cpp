// The NCCL watchdog's logic (parallel/nccl/watchdog.h) against a fake communicator: the same
// code NcclComm runs against NCCL on a GPU.
#include "parallel/nccl/watchdog.h"

#include <gtest/gtest.h>

#include "parallel/gpu_placement.h"
#include "tests/support/fixtures.h"

namespace rg::parallel::nccl {
namespace {
using rg::testing::throws_error;
using std::chrono::milliseconds;

// A communicator whose state is scripted: in progress for `queue_polls` polls, then ok (or
// failed from poll `fail_at` on), and whose work finishes after `work_polls` polls.
class FakeComm final : public Watched {
 public:
  int queue_polls = 0, work_polls = 0, fail_at = -1;
  int polls = 0, aborts = 0;
  CommState state(std::string& error) override {
    const int poll = polls++;
    if (fail_at >= 0 && poll >= fail_at) {
      error = "unhandled system error (remote process exited or there was a network error)";
      return CommState::failed;
    }
    return poll < queue_polls ? CommState::in_progress : CommState::ok;
  }
  void abort() override { ++aborts; }
  bool work_finished() const { return polls > work_polls; }
};

std::string what() {
  return "allreduce #3 (sum, 10 x f32, ring) to finish on the GPUs";
}

TEST(NcclWatchdog, ReturnsWhenQueuedOrFinishedWithoutAborting) {
  FakeComm comm;
  comm.queue_polls = 5;
  comm.work_polls = 20;
  Watchdog dog(comm, poll_with_deadline, milliseconds(5000));
  dog.wait(Until::queued, what);
  EXPECT_EQ(comm.polls, 6);  // in progress 5 times, then ok
  dog.wait(Until::finished, what, [&] { return comm.work_finished(); });
  EXPECT_GT(comm.polls, 20);
  EXPECT_EQ(comm.aborts, 0);
  EXPECT_FALSE(dog.aborted());
}

// A rank that dies mid-collective leaves the others' NCCL kernels waiting: only the timeout
// (or the engine noticing the dead process) ends the wait, and the abort frees the GPU.
TEST(NcclWatchdog, ATimeoutAbortsTheCommunicatorOnceAndNamesTheCollective) {
  FakeComm comm;
  comm.work_polls = 1 << 30;  // never finishes
  Watchdog dog(comm, poll_with_deadline, milliseconds(50));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(
      throws_error([&] { dog.wait(Until::finished, what, [&] { return comm.work_finished(); }); },
                   {"timed out after 50 ms waiting for allreduce #3",
                    "NCCL communicator aborted (ncclCommAbort)"}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(comm.aborts, 1);
  EXPECT_TRUE(dog.aborted());
  // Never used again: the next wait fails at once, naming the first fault, without polling.
  const int polls = comm.polls;
  EXPECT_TRUE(throws_error(
      [&] { dog.wait(Until::queued, what); },
      {"aborted after an earlier fault", "timed out after 50 ms", "never used again"}));
  EXPECT_EQ(comm.polls, polls);
  EXPECT_EQ(comm.aborts, 1);
}

TEST(NcclWatchdog, AnAsynchronousErrorAbortsWithNcclsMessage) {
  for (Until until : {Until::queued, Until::finished}) {
    FakeComm comm;
    comm.queue_polls = 1 << 30;
    comm.work_polls = 1 << 30;
    comm.fail_at = 3;
    Watchdog dog(comm, poll_with_deadline, milliseconds(60'000));
    EXPECT_TRUE(throws_error([&] { dog.wait(until, what, [&] { return comm.work_finished(); }); },
                             {"NCCL failed while waiting for allreduce #3", "remote process exited",
                              "NCCL communicator aborted"}));
    EXPECT_EQ(comm.polls, 4);
    EXPECT_EQ(comm.aborts, 1);
  }
}

// The engine's poll also watches the peers' processes: its error (a dead rank) aborts too.
TEST(NcclWatchdog, APeerFaultFromThePollAbortsWithItsMessage) {
  FakeComm comm;
  comm.work_polls = 1 << 30;
  int polls = 0;
  Poll engine_like = [&](const std::function<bool()>& done, milliseconds,
                         const std::function<std::string()>& waiting) {
    while (!done())
      if (++polls == 10)
        fail("rank 1 (pid 4711) has exited; this rank was waiting for ", waiting());
  };
  Watchdog dog(comm, engine_like, milliseconds(60'000));
  EXPECT_TRUE(throws_error(
      [&] { dog.wait(Until::finished, what, [&] { return comm.work_finished(); }); },
      {"rank 1 (pid 4711) has exited", "waiting for allreduce #3", "NCCL communicator aborted"}));
  EXPECT_EQ(comm.aborts, 1);
}

// A CUDA error found while polling the completion event (an illegal address in a kernel)
// aborts too.
TEST(NcclWatchdog, AnErrorOfTheCompletionCheckAborts) {
  FakeComm comm;
  Watchdog dog(comm, poll_with_deadline, milliseconds(60'000));
  EXPECT_TRUE(throws_error(
      [&] {
        dog.wait(Until::finished, what,
                 []() -> bool { fail("cudaEventQuery(done) failed: an illegal memory access"); });
      },
      {"illegal memory access", "NCCL communicator aborted"}));
  EXPECT_EQ(comm.aborts, 1);
}

}  // namespace
}  // namespace rg::parallel::nccl

namespace rg::parallel {
namespace {

TEST(GpuPlacement, OneRankPerGpuPasses) {
  check_one_rank_per_gpu({});
  check_one_rank_per_gpu(
      {{.rank = 0, .host = 0, .device = 0}, {.rank = 1, .host = 0, .device = 1}});
  // Two machines, cuda:0 on each.
  check_one_rank_per_gpu(
      {{.rank = 0, .host = 0, .device = 0}, {.rank = 1, .host = 1, .device = 0}});
}

TEST(GpuPlacement, TwoRanksOnOneGpuAreRefusedNamingTheMpiBackend) {
  EXPECT_TRUE(rg::testing::throws_error(
      [] {
        check_one_rank_per_gpu({{.rank = 0, .host = 0, .device = 0},
                                {.rank = 1, .host = 2, .device = 0},
                                {.rank = 2, .host = 2, .device = 1},
                                {.rank = 3, .host = 2, .device = 0}});
      },
      {"ranks 1 and 3 are both on cuda:0", "Duplicate GPU detected", "--backend mpi"}));
}

}  // namespace
}  // namespace rg::parallel
