// The fault plan: specs parse into faults, bad specs are named errors, and at_step does to the
// process what the spec says — checked in a forked child, whose end the parent observes.
#include "parallel/faults.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <functional>

#include "tests/support/fixtures.h"

namespace rg::parallel {
namespace {
using rg::testing::throws_error;

TEST(FaultPlan, ParsesEachKind) {
  const Fault kill = parse_fault("kill:rank=1:step=50");
  EXPECT_EQ(kill.kind, FaultKind::kill);
  EXPECT_EQ(kill.rank, 1);
  EXPECT_EQ(kill.step, 50);
  EXPECT_EQ(kill.spec, "kill:rank=1:step=50");

  const Fault exit = parse_fault("exit:step=7:rank=2:code=3");  // any order
  EXPECT_EQ(exit.kind, FaultKind::exit);
  EXPECT_EQ(exit.rank, 2);
  EXPECT_EQ(exit.step, 7);
  EXPECT_EQ(exit.exit_code, 3);
  EXPECT_EQ(parse_fault("exit:rank=0:step=1").exit_code, 1);  // the default status

  const Fault delay = parse_fault("delay:rank=1:step=50:seconds=2.5");
  EXPECT_EQ(delay.kind, FaultKind::delay);
  EXPECT_DOUBLE_EQ(delay.seconds, 2.5);

  EXPECT_EQ(kill.at, FaultPoint::step);  // before the step, unless at= says otherwise
  EXPECT_EQ(parse_fault("kill:rank=1:step=5:at=step").at, FaultPoint::step);
  EXPECT_EQ(parse_fault("exit:rank=1:step=5:at=backward:code=2").at, FaultPoint::backward);
  EXPECT_EQ(parse_fault("delay:rank=0:step=5:seconds=1:at=checkpoint").at, FaultPoint::checkpoint);
  EXPECT_EQ(parse_fault("stop:rank=3:step=9").kind, FaultKind::stop);
  EXPECT_EQ(parse_fault("error:rank=0:step=2").kind, FaultKind::error);

  const FaultPlan plan({"kill:rank=1:step=5", "delay:rank=0:step=2:seconds=1"});
  ASSERT_EQ(plan.faults().size(), 2u);
  EXPECT_EQ(plan.specs(),
            (std::vector<std::string>{"kill:rank=1:step=5", "delay:rank=0:step=2:seconds=1"}));
  EXPECT_TRUE(FaultPlan().empty());
}

// overflow: an inf in one gradient during step S's backward, on rank 0 unless named.
TEST(FaultPlan, AnOverflowSetsTheGradientToInfinity) {
  const Fault f = parse_fault("overflow:step=3");
  EXPECT_EQ(f.kind, FaultKind::overflow);
  EXPECT_EQ(f.rank, 0);
  EXPECT_EQ(f.at, FaultPoint::backward);
  EXPECT_EQ(parse_fault("overflow:step=3:rank=2").rank, 2);
  EXPECT_TRUE(
      throws_error([] { parse_fault("overflow:step=3:at=step"); }, {"overflow takes no 'at'"}));
  const FaultPlan plan({"overflow:step=3:rank=1"});
  EXPECT_TRUE(plan.has(FaultKind::overflow));
  EXPECT_FALSE(plan.has(FaultKind::kill));
  Tensor p = zeros({4}).set_requires_grad(true);
  p.set_grad(ones({4}));
  plan.in_backward(1, 2, p);  // another step
  plan.in_backward(0, 3, p);  // another rank
  EXPECT_EQ(p.grad().to_vector<float>(), std::vector<float>(4, 1.f));
  plan.in_backward(1, 3, p);
  for (float g : p.grad().to_vector<float>()) EXPECT_TRUE(std::isinf(g));
  EXPECT_TRUE(throws_error([&] { plan.in_backward(1, 3); }, {"no gradient to overflow"}));
}

TEST(FaultPlan, BadSpecsAreNamedErrors) {
  EXPECT_TRUE(throws_error([] { parse_fault(""); },
                           {"unknown kind ''", "kill, exit, delay, stop, error or overflow"}));
  EXPECT_TRUE(throws_error([] { parse_fault("crash:rank=1:step=5"); },
                           {"fault 'crash:rank=1:step=5'", "unknown kind 'crash'"}));
  EXPECT_TRUE(throws_error([] { parse_fault("kill:rank=1"); }, {"kill needs step="}));
  EXPECT_TRUE(throws_error([] { parse_fault("kill:step=4"); }, {"kill needs rank="}));
  EXPECT_TRUE(throws_error([] { parse_fault("delay:rank=1:step=5"); }, {"delay needs seconds="}));
  EXPECT_TRUE(throws_error([] { parse_fault("kill:rank=1:step=5:seconds=3"); },
                           {"kill takes no 'seconds'", "rank, step, at"}));
  EXPECT_TRUE(throws_error([] { parse_fault("kill:rank=1:step=5:at=forward"); },
                           {"at must be step, backward or checkpoint", "'forward'"}));
  EXPECT_TRUE(throws_error([] { parse_fault("kill:rank=1:step=5:at=checkpoint"); },
                           {"kill:rank=1:step=5:at=checkpoint", "at=checkpoint needs rank=0"}));
  EXPECT_TRUE(throws_error([] { parse_fault("delay:rank=1:step=5:seconds=3:code=2"); },
                           {"delay takes no 'code'"}));
  EXPECT_TRUE(
      throws_error([] { parse_fault("kill:rank=1:step=5:rank=2"); }, {"'rank' is given twice"}));
  EXPECT_TRUE(
      throws_error([] { parse_fault("kill:rank=1:step5"); }, {"expected key=value", "step5"}));
  EXPECT_TRUE(throws_error([] { parse_fault("kill:rank=1:step=5:"); }, {"expected key=value"}));
  EXPECT_TRUE(throws_error([] { parse_fault("kill:rank=-1:step=5"); },
                           {"rank must be an integer in [0, 1048576]", "'-1'"}));
  EXPECT_TRUE(
      throws_error([] { parse_fault("kill:rank=4294967297:step=5"); }, {"rank", "4294967297"}));
  EXPECT_TRUE(
      throws_error([] { parse_fault("kill:rank=1:step=0"); }, {"step must be an integer in [1,"}));
  EXPECT_TRUE(throws_error([] { parse_fault("kill:rank=1:step=1e3"); }, {"step", "'1e3'"}));
  EXPECT_TRUE(throws_error([] { parse_fault("kill:rank=1:step=99999999999999999999"); },
                           {"step", "99999999999999999999"}));
  EXPECT_TRUE(throws_error([] { parse_fault("exit:rank=1:step=5:code=256"); },
                           {"code must be an integer in [0, 255]", "'256'"}));
  for (const char* bad : {"0", "-1", "nan", "inf", "1e300", "2s", ""})
    EXPECT_TRUE(
        throws_error([&] { parse_fault(std::string("delay:rank=1:step=5:seconds=") + bad); },
                     {"seconds must be a number in (0, 1e+06]"}))
        << bad;
  // A long spec is quoted cut short.
  try {
    parse_fault("kill:rank=1:step=" + std::string(100000, '9'));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 400u);
  }
  // The plan names the bad spec among several.
  EXPECT_TRUE(throws_error(
      [] {
        FaultPlan({"kill:rank=1:step=5", "stop:rank=x:step=2"});
      },
      {"stop:rank=x:step=2", "rank"}));
}

TEST(FaultPlan, RefusesRanksTheJobDoesNotHave) {
  const FaultPlan plan({"kill:rank=1:step=5"});
  EXPECT_TRUE(throws_error([&] { plan.check_world(1); },
                           {"kill:rank=1:step=5", "rank 1 does not exist in a job of 1 process"}));
  plan.check_world(2);
}

// Runs `plan.at_step(rank, step)` in a child process and returns its wait status (with
// WUNTRACED: a stopped child is reported as stopped, then killed).
int status_after(const FaultPlan& plan, int rank, int64_t step) {
  const pid_t child = fork();
  if (child == 0) {
    plan.at_step(rank, step);
    _exit(42);  // the step went on: no fault fired (or a delay ended)
  }
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, WUNTRACED), child);
  if (WIFSTOPPED(status)) {
    kill(child, SIGKILL);
    int ignored = 0;
    waitpid(child, &ignored, 0);
  }
  return status;
}

TEST(FaultPlan, AtStepDoesWhatTheSpecSays) {
  const FaultPlan plan({"kill:rank=1:step=3", "exit:rank=1:step=4:code=3", "exit:rank=0:step=4",
                        "stop:rank=2:step=3", "delay:rank=0:step=3:seconds=0.01"});
  int s = status_after(plan, 1, 3);
  EXPECT_TRUE(WIFSIGNALED(s) && WTERMSIG(s) == SIGKILL) << s;
  s = status_after(plan, 1, 4);
  EXPECT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 3) << s;
  s = status_after(plan, 0, 4);
  EXPECT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 1) << s;
  s = status_after(plan, 2, 3);
  EXPECT_TRUE(WIFSTOPPED(s) && WSTOPSIG(s) == SIGSTOP) << s;
  EXPECT_TRUE(throws_error([] { FaultPlan({"error:rank=1:step=2"}).at_step(1, 2); },
                           {"injected fault error:rank=1:step=2 at step 2", "rank 1's own"}));
  // A delay returns, and so does every step or rank with nothing planned.
  for (auto [rank, step] : {std::pair{0, 3}, {1, 2}, {1, 5}, {3, 3}}) {
    s = status_after(plan, rank, step);
    EXPECT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 42) << "rank " << rank << " step " << step;
  }
}

// Each fault fires at its own point only: at=backward in the backward of its step, at=checkpoint
// in the checkpoint of the epoch that holds its step; the fault before a step fires only there.
TEST(FaultPlan, EachPointFiresOnlyItsOwnFaults) {
  const FaultPlan plan({"kill:rank=1:step=3:at=backward", "exit:rank=0:step=6:at=checkpoint:code=5",
                        "exit:rank=1:step=4:code=4"});
  EXPECT_TRUE(plan.has(1, FaultPoint::backward));
  EXPECT_TRUE(plan.has(0, FaultPoint::checkpoint));
  EXPECT_TRUE(plan.has(1, FaultPoint::step));
  EXPECT_FALSE(plan.has(0, FaultPoint::backward));
  EXPECT_FALSE(plan.has(1, FaultPoint::checkpoint));
  const auto status_of = [](const std::function<void()>& f) {
    const pid_t child = fork();
    if (child == 0) {
      f();
      _exit(42);
    }
    int status = 0;
    EXPECT_EQ(waitpid(child, &status, 0), child);
    return status;
  };
  int s = status_of([&] { plan.in_backward(1, 3); });
  EXPECT_TRUE(WIFSIGNALED(s) && WTERMSIG(s) == SIGKILL) << s;
  // The epoch of steps 5..8 holds step 6: its checkpoint write ends the process.
  s = status_of([&] { plan.in_checkpoint_write(0, 5, 8, "last.safetensors"); });
  EXPECT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 5) << s;
  s = status_of([&] { plan.at_step(1, 4); });
  EXPECT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 4) << s;
  // Nothing fires at another point, step, epoch or rank.
  for (const auto& nothing : std::vector<std::function<void()>>{
           [&] { plan.at_step(1, 3); },      // before, not in
           [&] { plan.in_backward(1, 4); },  // another step (whose fault fires before it)
           [&] { plan.in_backward(0, 3); },  // another rank
           [&] { plan.in_checkpoint_write(0, 1, 5, "last.safetensors"); },   // the epoch before
           [&] { plan.in_checkpoint_write(0, 7, 10, "last.safetensors"); },  // the epoch after
           [&] { plan.at_step(0, 6); }}) {                                   // not a checkpoint
    s = status_of(nothing);
    EXPECT_TRUE(WIFEXITED(s) && WEXITSTATUS(s) == 42) << s;
  }
  EXPECT_TRUE(throws_error(
      [] { FaultPlan({"error:rank=0:step=2:at=checkpoint"}).in_checkpoint_write(0, 1, 4, "f"); },
      {"injected fault error:rank=0:step=2:at=checkpoint while writing f", "rank 0's own"}));
  EXPECT_TRUE(throws_error([] { FaultPlan({"error:rank=1:step=2:at=backward"}).in_backward(1, 2); },
                           {"during the backward of step 2"}));
}

}  // namespace
}  // namespace rg::parallel
