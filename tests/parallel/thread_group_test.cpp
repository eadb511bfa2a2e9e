#include "parallel/thread_group.h"

#include <gtest/gtest.h>

#include "tests/support/fixtures.h"

namespace rg::parallel {
namespace {
using rg::testing::throws_error;

TEST(ThreadGroup, Collectives) {
  const int n = 3;
  auto groups = ThreadGroup::create(n);
  std::vector<std::vector<float>> sums(n), maxes(n), gathered(n), scattered(n), bcast(n);
  run_ranks(n, [&](int r) {
    ProcessGroup& g = *groups[r];
    Tensor t = full({4}, r + 1.0);
    g.allreduce(t, ReduceOp::sum)->wait();
    sums[r] = t.to_vector<float>();
    Tensor m = from_vector<float>({float(r), float(-r)}, {2});
    g.allreduce(m, ReduceOp::max)->wait();
    maxes[r] = m.to_vector<float>();
    Tensor out = zeros({2 * n});
    g.allgather(out, full({2}, r))->wait();
    gathered[r] = out.to_vector<float>();
    Tensor piece = zeros({1});
    g.reduce_scatter(piece, arange(0, n), ReduceOp::average)->wait();
    scattered[r] = piece.to_vector<float>();
    Tensor b = full({2}, r == 1 ? 7.0 : 0.0);
    g.broadcast(b, 1)->wait();
    bcast[r] = b.to_vector<float>();
    g.barrier()->wait();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(sums[r], std::vector<float>(4, 6.f));
    EXPECT_EQ(maxes[r], (std::vector<float>{2.f, 0.f}));
    EXPECT_EQ(gathered[r], (std::vector<float>{0, 0, 1, 1, 2, 2}));
    EXPECT_EQ(scattered[r], (std::vector<float>{float(r)}));
    EXPECT_EQ(bcast[r], (std::vector<float>{7, 7}));
  }
}

TEST(ThreadGroup, MismatchAndTimeoutNameTheRanks) {
  auto groups = ThreadGroup::create(2, std::chrono::milliseconds(200));
  EXPECT_TRUE(throws_error(
      [&] {
        run_ranks(2, [&](int r) {
          if (r == 0)
            groups[0]->allreduce(zeros({3}), ReduceOp::sum)->wait();
          else
            groups[1]->allreduce(zeros({4}), ReduceOp::sum)->wait();
        });
      },
      {"collective mismatch", "rank 1"}));
  auto lonely = ThreadGroup::create(2, std::chrono::milliseconds(100));
  EXPECT_TRUE(throws_error([&] { lonely[0]->barrier()->wait(); },
                           {"barrier", "rank 0", "timed out", "rank(s) 1"}));
}

}  // namespace
}  // namespace rg::parallel
