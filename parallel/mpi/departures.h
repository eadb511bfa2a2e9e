#pragma once
// Departures: how a rank that leaves the job tells the others, and what they make of it.
//
// A rank that leaves cleanly — its program returns from main or calls exit() (both reach
// parallel::shutdown at exit), calls parallel::shutdown() itself, or ends on an exception that
// escapes it (std::terminate) — is alive while it leaves: /proc shows nothing wrong, so a peer
// waiting for it in a collective would wait the whole timeout (300 s), and the leaving rank
// with it, in shutdown's final barrier. So the leaving rank first sends every other rank a
// notice: how it left, and how many collectives of each group it completed. A rank waiting in
// a collective reads the notices at every liveness check (50 ms):
//
//   rank 0 left the job (its program returned) after 3 collectives; rank 1 waits in allreduce #4
//
// Collective #4 needs rank 0, which completed only 3: the waiting rank fails at once (and the job
// ends). A rank waiting in collective #3 or earlier waits on — the leaver did its part, the
// bytes are on their way. A rank that fails tells the ranks that announced they were leaving
// (they wait for it in shutdown's barrier, which it will never reach), so they end too instead
// of waiting out the timeout.
//
// The notices are plain text on the engine's own communicator (engine.h sends and receives
// them); this file holds what they say and the verdicts, apart from MPI, so that the rules are
// unit-tested (tests/parallel/departures_test.cpp).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rg::parallel::mpi {

enum class NoticeKind : char {
  leaving = 'L',  // in shutdown: it meets the final barrier (every rank that ends well does)
  ending = 'E',   // leaves without the barrier: an uncaught exception, an earlier fault
  failed = 'F',   // hit a fault (its message): sent to the ranks that announced leaving
};

struct Notice {
  NoticeKind kind = NoticeKind::leaving;
  std::string how{};                 // "its program returned"; a failed rank's error message
  std::vector<int64_t> completed{};  // collectives completed, per group (creation order)
};

std::string encode(const Notice& notice);
// Throws rg::Error on text that is not a notice.
Notice decode(const std::string& text);

// What the communication thread waits in, which decides what a notice means.
struct Waiting {
  enum class What { other, collective, group_creation, shutdown };
  What what = What::other;
  int group = 0;          // collective: its group; group_creation: the group being created
  int64_t seq = 0;        // collective: its number in the group (from 1)
  const char* kind = "";  // collective: "allreduce", "broadcast", ...
};

// The error a rank waiting in `waiting` must fail with, given the notices received so far
// (by sender's rank); empty when it may wait on.
std::string judge(const std::map<int, Notice>& received, const Waiting& waiting, int me);

// How a program reached parallel::shutdown at exit.
enum class ExitPath {
  main_returned,  // libc's start routine called exit() with main's return value
  exit_called,    // the program (or a library) called exit()
  unknown,        // the stack did not say
};

// Which path the exit now running took, read from the stack (backtrace, dladdr: is the caller
// of libc's exit() libc itself?). Call it from an on_exit handler.
ExitPath exit_path();

// "its program returned", "its program returned 3", "its program called exit(2)", "its program
// ended (exit status 1)": `status` is main's return value or exit()'s argument.
std::string describe_exit(ExitPath path, int status);

}  // namespace rg::parallel::mpi
