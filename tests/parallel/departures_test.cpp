// The rules of departure notices (parallel/mpi/departures.h), apart from MPI: what a rank that
// left says, and what a rank waiting in a collective, a group's creation or shutdown's barrier
// makes of it. The notices themselves travel in tests/parallel_mpi/faults.cpp's leave_*
// scenarios (CTest parallel_mpi.fault_leave_*).
#include "parallel/mpi/departures.h"

#include <gtest/gtest.h>

#include "core/error.h"

using namespace rg::parallel::mpi;

namespace {
Waiting in_collective(int group, int64_t seq, const char* kind = "allreduce") {
  return {.what = Waiting::What::collective, .group = group, .seq = seq, .kind = kind};
}
}  // namespace

TEST(Departures, NoticesSurviveTheirEncoding) {
  const Notice n{.kind = NoticeKind::ending,
                 .how = "an uncaught exception ended its program: a\nb",
                 .completed = {3, 0, 12}};
  const Notice back = decode(encode(n));
  EXPECT_EQ(back.kind, n.kind);
  EXPECT_EQ(back.how, n.how);
  EXPECT_EQ(back.completed, n.completed);
  const Notice empty = decode(encode({.kind = NoticeKind::failed, .how = ""}));
  EXPECT_TRUE(empty.completed.empty());
  EXPECT_EQ(empty.how, "");
}

TEST(Departures, MalformedNoticesAreErrors) {
  EXPECT_THROW(decode(""), rg::Error);
  EXPECT_THROW(decode("L"), rg::Error);
  EXPECT_THROW(decode("X\n1\nhow"), rg::Error);
  EXPECT_THROW(decode("L\n1 x\nhow"), rg::Error);
  EXPECT_THROW(decode("LL\n1\nhow"), rg::Error);
}

TEST(Departures, ACollectiveTheLeaverNeverJoinsFailsNamingIt) {
  const std::map<int, Notice> received = {
      {0, {.kind = NoticeKind::leaving, .how = "its program returned", .completed = {3}}}};
  EXPECT_EQ(judge(received, in_collective(0, 4), 1),
            "rank 0 left the job (its program returned) after 3 collectives; rank 1 waits in "
            "allreduce #4");
  // #3 and before: the leaver did its part, the bytes are on their way.
  EXPECT_EQ(judge(received, in_collective(0, 3), 1), "");
  EXPECT_EQ(judge(received, in_collective(0, 1), 1), "");
}

TEST(Departures, CountsArePerGroup) {
  const std::map<int, Notice> received = {
      {2, {.kind = NoticeKind::ending, .how = "x", .completed = {10, 1}}}};
  EXPECT_EQ(judge(received, in_collective(1, 1), 0), "");
  EXPECT_EQ(judge(received, in_collective(1, 2, "barrier"), 0),
            "rank 2 left the job (x) after 1 collective of group 1; rank 0 waits in barrier #2");
  EXPECT_EQ(judge(received, in_collective(2, 1, "broadcast"), 0),
            "rank 2 left the job (x) before it created group 2; rank 0 waits in broadcast #1");
}

TEST(Departures, AGroupTheLeaverNeverCreatesFails) {
  const std::map<int, Notice> received = {
      {1, {.kind = NoticeKind::leaving, .how = "its program returned", .completed = {5}}}};
  const Waiting creating{.what = Waiting::What::group_creation, .group = 1};
  EXPECT_EQ(judge(received, creating, 0),
            "rank 1 left the job (its program returned) having created 1 group(s); rank 0 waits "
            "for it to create group 1");
  EXPECT_EQ(judge(received, {.what = Waiting::What::group_creation, .group = 0}, 0), "");
}

TEST(Departures, InShutdownOnlyRanksThatWillNotComeFail) {
  const Waiting barrier{.what = Waiting::What::shutdown};
  EXPECT_EQ(judge({{1, {.kind = NoticeKind::leaving, .how = "h", .completed = {1}}}}, barrier, 0),
            "");
  EXPECT_EQ(
      judge({{1, {.kind = NoticeKind::failed, .how = "allreduce #4 ...: timed out"}}}, barrier, 0),
      "rank 1 stopped on an error while this rank was leaving the job: allreduce #4 ...: "
      "timed out");
  EXPECT_EQ(judge({{2, {.kind = NoticeKind::ending, .how = "an uncaught exception"}}}, barrier, 0),
            "rank 2 left the job without shutting down (an uncaught exception): it will not meet "
            "this rank in the final barrier");
}

TEST(Departures, AFailedRanksNoticeDoesNotFailACollective) {
  // A rank that failed ends the job itself; the others keep their own diagnosis.
  const std::map<int, Notice> received = {{1, {.kind = NoticeKind::failed, .how = "e"}}};
  EXPECT_EQ(judge(received, in_collective(0, 9), 0), "");
  EXPECT_EQ(judge(received, {}, 0), "");  // waiting in nothing a notice concerns
}

TEST(Departures, ExitsAreDescribed) {
  EXPECT_EQ(describe_exit(ExitPath::main_returned, 0), "its program returned");
  EXPECT_EQ(describe_exit(ExitPath::main_returned, 3), "its program returned 3");
  EXPECT_EQ(describe_exit(ExitPath::exit_called, 2), "its program called exit(2)");
  EXPECT_EQ(describe_exit(ExitPath::unknown, 1), "its program ended (exit status 1)");
  // Outside an exit the stack holds no exit(): nothing to say.
  EXPECT_EQ(exit_path(), ExitPath::unknown);
}
