// GoogleTest main of the MPI tests. CTest starts it under mpirun with 2, 3 and 4 ranks, and
// alone (a world of size 1). Every rank runs every test; the collectives inside a test meet
// across ranks. Only rank 0 prints the usual report; the others print their failures, tagged
// with their rank. The exit status is agreed over all ranks, so a failure on any rank fails
// the test everywhere.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/tensor.h"
#include "parallel/world.h"

namespace {
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stdout, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
    std::fflush(stdout);
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed())  // not a skip: "needs a GPU" is no failure
      std::fprintf(stdout, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
  }

 private:
  int rank_;
};
}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace rg::parallel;
  // A bug that desynchronises the ranks shows up as a named mismatch (check_sequence) or after
  // 20 s, then ends the whole job (OnFault::abort_job): the test fails, it never hangs.
  auto world = init({.timeout = std::chrono::seconds(20), .check_sequence = true});
  if (world->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(world->rank()));
  }
  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  rg::Tensor any = rg::full({1}, failed, {.dtype = rg::DType::i64});
  world->allreduce(any, ReduceOp::max)->wait();
  const bool any_failed = any.item() != 0;
  if (any_failed && !failed)
    std::printf("[rank %d] passed here, but another rank failed\n", world->rank());
  return any_failed ? 1 : 0;
}
