// mpi_faults SCENARIO: a job that goes wrong on purpose. CTest runs it under mpirun with 3
// ranks through expect_output.sh, which checks what every rank printed, the exit status and
// that it all ended well within the time limit — the promise is "an error naming the rank and
// the operation, never a hang".
//
//   timeout    rank 1 skips allreduce #2 and goes on to a barrier: ranks 0 and 2 time out in
//              the allreduce, rank 1 in the barrier; the job ends (MPI_Abort).
//   kill       rank 1 is killed (SIGKILL) before allreduce #2: ranks 0 and 2 report rank 1's
//              death long before their 60 s timeout; the job ends (MPI_Abort).
//   exit       rank 1 returns from main early, without shutting down: the others notice in
//              their final barrier.
//   mismatch   check_sequence on: rank 1 calls allreduce #2 with 5 elements where the others
//              use 4; every rank reports the same mismatch naming both calls.
//   skip       check_sequence on: rank 1 calls barrier #2 where the others call allreduce #2.
//   start      rank 1 dies (exit status 3) before MPI_Init, as a rank killed while the job
//              starts: the others, in MPI_Init for good, give up when the start's deadline
//              passes (the timeout, 1.5 s here, but at least 10 s), naming the start.
//   leave_return, leave_exit, leave_throw, leave_shutdown
//              rank 0 leaves cleanly after 3 allreduces — returns from main, calls exit(3),
//              lets an exception out of main, calls parallel::shutdown() — while ranks 1 and 2
//              go on to allreduce #4. Alive, rank 0 is invisible to /proc: its departure notice
//              (parallel/mpi/departures.h) must make ranks 1 and 2 fail within a liveness check,
//              naming it and how it left, long before the 60 s timeout; and rank 0 must not wait
//              the timeout in shutdown's barrier either.
//
// With the suffix _cuda (kill_cuda, timeout_cuda, leave_return_cuda, ...) the allreduces run on
// cuda:<local rank> over NCCL, one GPU per rank: then the survivors' NCCL kernels wait for the
// dead, late or departed rank, and the watchdog (parallel/nccl/watchdog.h) must abort the
// communicator (ncclCommAbort) within the timeout — which the message says.
// scripts/gpu_multi_check.sh runs them on several GPUs (never run yet).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/tensor.h"
#include "parallel/world.h"

using namespace rg;
using namespace rg::parallel;
using std::chrono::milliseconds;

namespace {
void say(const std::string& text) {
  const std::string line = "[rank " + std::to_string(rank()) + "] " + text + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

// A job whose rank 1 never starts: MPI is not up, so the rank comes from the launcher.
int run_start() {
  const char* env_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const std::string me = env_rank ? env_rank : "?";
  if (me == "1") _exit(3);
  try {
    init({.timeout = milliseconds(1500)});
  } catch (const Error& e) {
    const std::string line = "[rank " + me + "] caught: " + e.what() + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
    return 1;
  }
  std::printf("[rank %s] started without rank 1 (unexpected)\n", me.c_str());
  return 1;
}

// Rank 0 completes 3 collectives, then leaves as `how` says; the others wait in #4.
int run_leave(std::string how) {
  const bool cuda = how.ends_with("_cuda");
  if (cuda) how.resize(how.size() - 5);
  auto world = init({.timeout = milliseconds(60000)});
  const Device device = cuda ? Device::cuda(world->local_rank()) : Device::cpu();
  auto ones_on = [&](int64_t n) { return ones({n}, {.device = device}); };
  for (int i = 1; i <= 3; ++i) world->allreduce(ones_on(1000), ReduceOp::sum)->wait();
  say("allreduce #3 done");
  if (world->rank() == 0) {
    if (how == "return") return 0;
    if (how == "exit") std::exit(3);
    if (how == "throw") throw std::runtime_error("rank 0 gives up");
    shutdown();
    say("shut down (unexpected: rank 1 and 2 never reach the barrier)");
    return 0;
  }
  try {
    world->allreduce(ones_on(1000), ReduceOp::sum)->wait();
  } catch (const Error& e) {
    say(std::string("caught: ") + e.what());
    return 1;
  }
  say("no error (unexpected)");
  return 1;
}

int run(std::string scenario) {
  const bool cuda = scenario.ends_with("_cuda");
  if (cuda) scenario.resize(scenario.size() - 5);
  if (scenario == "start") {  // before MPI, so before any GPU: there is no start_cuda
    if (!cuda) return run_start();
    std::fprintf(stderr, "mpi_faults: start has no _cuda variant\n");
    return 2;
  }
  const bool debug = scenario == "mismatch" || scenario == "skip";
  // NCCL's communicator starts within the first collective: give it time.
  const milliseconds timeout =
      scenario == "timeout" ? milliseconds(cuda ? 5000 : 1500) : milliseconds(60000);
  // The checked scenarios keep running after the error so that each rank can print it; the
  // others end the job the way a training run would.
  const OnFault on_fault = debug ? OnFault::throw_error : OnFault::abort_job;
  auto world = init({.timeout = timeout, .check_sequence = debug}, on_fault);
  const int me = world->rank();
  const Device device = cuda ? Device::cuda(world->local_rank()) : Device::cpu();
  auto ones_on = [&](int64_t n) { return ones({n}, {.device = device}); };

  Tensor t = ones_on(1000);
  world->allreduce(t, ReduceOp::sum)->wait();  // #1: everybody
  say("allreduce #1 done");

  if (scenario == "kill" && me == 1) raise(SIGKILL);
  if (scenario == "exit" && me == 1) _exit(0);
  try {
    if (scenario == "timeout" && me == 1) {
      if (cuda)  // a barrier is MPI's: over NCCL the late rank only sleeps
        std::this_thread::sleep_for(timeout * 4);
      else
        world->barrier()->wait();
    } else if (scenario == "skip" && me == 1) {
      world->barrier()->wait();
    } else if (scenario == "mismatch" && me == 1) {
      world->allreduce(ones_on(5), ReduceOp::sum)->wait();
    } else if (scenario == "exit") {
      say("done; shutting down");
      shutdown();
      say("shut down (unexpected)");
      return 0;
    } else {
      world->allreduce(ones_on(debug ? 4 : 1000), ReduceOp::sum)->wait();
    }
  } catch (const Error& e) {
    say(std::string("caught: ") + e.what());
    // A rank that exits without MPI_Finalize (a broken group skips it) makes mpirun end the
    // others: give them time to print first.
    if (debug) std::this_thread::sleep_for(milliseconds(500));
    return debug ? 0 : 1;
  }
  say("no error (unexpected)");
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: mpi_faults timeout|kill|exit|mismatch|skip[_cuda]|start|"
                 "leave_{return,exit,throw,shutdown}[_cuda]\n");
    return 2;
  }
  // Outside the try: leave_throw's exception must escape main (without a GPU, leave_throw_cuda's
  // "no usable GPU" escapes it too, which std::terminate prints).
  if (const std::string s = argv[1]; s.starts_with("leave_throw")) return run_leave(s.substr(6));
  try {
    if (const std::string s = argv[1]; s.starts_with("leave_")) return run_leave(s.substr(6));
    return run(argv[1]);
  } catch (const std::exception& e) {  // outside the scenario: no GPU for _cuda, say
    std::fprintf(stderr, "mpi_faults: %s\n", e.what());
    end_job_after_error("mpi_faults stopped on the error above");
    return 2;
  }
}
