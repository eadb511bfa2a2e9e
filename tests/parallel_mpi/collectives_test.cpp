// Collectives across real processes: our ring against MPI's own algorithms and against a plain
// reference, for every op, dtype and awkward size. Each rank can compute every other rank's
// input (it is a function of rank and position), so each checks the result by itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <regex>
#include <thread>

#include "core/dispatch.h"
#include "core/trace.h"
#include "parallel/mpi/mpi_check.h"
#include "parallel/reduce.h"
#include "parallel/world.h"
#include "tests/parallel_mpi/collective_values.h"
#include "tests/support/fixtures.h"

namespace rg::parallel {
namespace {
using rg::testing::throws_error;
using namespace rg::parallel::testing;

// The groups every test uses, made once in the same order on every rank.
const CollectiveGroups& groups() {
  static const CollectiveGroups g = make_collective_groups(std::chrono::seconds(20));
  return g;
}

::testing::AssertionResult close(const Tensor& actual, const Tensor& expected, double tol) {
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  if (a.size() != e.size()) return ::testing::AssertionFailure() << "size differs";
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - e[i]) <= tol))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs " << e[i] << " (tolerance " << tol << ")";
  return ::testing::AssertionSuccess();
}

// 0, 1, below / at / above the number of ranks, odd sizes, and one that the default 1 MiB
// messages split (300 003 f64 ≈ 2.4 MB).
std::vector<int64_t> sizes(int64_t ranks, DType dtype) {
  std::vector<int64_t> s{0, 1, ranks - 1, ranks, ranks + 1, 2 * ranks + 1, 7, 100, 4099};
  if (dtype == DType::f64) s.push_back(300003);
  return s;
}

TEST(MpiWorld, Coordinates) {
  auto w = world_ptr();
  EXPECT_GE(w->rank(), 0);
  EXPECT_LT(w->rank(), w->size());
  EXPECT_EQ(w->rank(), rank());
  EXPECT_EQ(w->size(), size());
  // CTest starts every rank on this machine.
  EXPECT_EQ(local_rank(), rank());
  EXPECT_EQ(local_size(), size());
  // MPI when started by mpirun (or forced with RG_BACKEND), else a world of one without MPI.
  const char* forced = std::getenv("RG_BACKEND");
  const bool launched = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  EXPECT_EQ(w->backend(), forced ? forced : launched ? "mpi" : "single");
  Tensor ranks = zeros({size()}, {.dtype = DType::i64});
  w->allgather(ranks, full({1}, rank(), {.dtype = DType::i64}))->wait();
  for (int r = 0; r < size(); ++r) EXPECT_EQ(ranks.to_vector<int64_t>()[r], r);
}

TEST(MpiCollectives, AllreduceRingEqualsNativeForEveryOpDtypeAndSize) {
  const CollectiveGroups& g = groups();
  const int n_ranks = size(), me = rank();
  for (DType dtype : kDtypes)
    for (ReduceOp op : kOps)
      for (int64_t n : sizes(n_ranks, dtype)) {
        SCOPED_TRACE(::testing::Message() << "allreduce " << reduce_op_name(op) << " of " << n
                                          << " x " << dtype << " over " << n_ranks << " ranks");
        Tensor ring = input(me, n, dtype), small = ring.clone(), native = ring.clone();
        // All three in flight at once: they run in issue order on the communication thread.
        // (36-byte messages would take 10^5 of them for the largest size: not that one.)
        auto w1 = g.ring->allreduce(ring, op);
        auto w2 = n < 10000 ? g.ring_small->allreduce(small, op) : g.ring->allreduce(small, op);
        auto w3 = g.native->allreduce(native, op);
        w1->wait(), w2->wait(), w3->wait();
        const bool exact = !is_floating(dtype) || op == ReduceOp::max || op == ReduceOp::min;
        if (exact) {
          ASSERT_EQ(ring.to_vector<double>(), native.to_vector<double>());
          ASSERT_EQ(small.to_vector<double>(), native.to_vector<double>());
          ASSERT_EQ(native.to_vector<double>(),
                    reference(n_ranks, n, 0, dtype, op).to_vector<double>());
        } else {
          const Tensor expected = reference(n_ranks, n, 0, dtype, op);
          const double tol = tolerance(dtype, n_ranks);
          ASSERT_TRUE(close(ring, expected, tol)) << "ring";
          ASSERT_TRUE(close(small, expected, tol)) << "ring, small messages";
          ASSERT_TRUE(close(native, expected, tol)) << "native";
          ASSERT_TRUE(close(ring, native, 2 * tol)) << "ring vs native";
        }
      }
}

TEST(MpiCollectives, ReduceScatterRingEqualsNative) {
  const CollectiveGroups& g = groups();
  const int n_ranks = size(), me = rank();
  for (DType dtype : kDtypes)
    for (ReduceOp op : kOps)
      for (int64_t n : {0, 1, 3, 50}) {
        SCOPED_TRACE(::testing::Message() << "reduce_scatter " << reduce_op_name(op) << " of " << n
                                          << " x " << dtype << " per rank");
        const Tensor in = input(me, n * n_ranks, dtype), in_copy = in.clone();
        Tensor ring = zeros({n}, {.dtype = dtype}), small = ring.clone(), native = ring.clone();
        g.ring->reduce_scatter(ring, in, op)->wait();
        g.ring_small->reduce_scatter(small, in, op)->wait();
        g.native->reduce_scatter(native, in, op)->wait();
        ASSERT_EQ(in.to_vector<double>(), in_copy.to_vector<double>()) << "input changed";
        const Tensor expected = reference(n_ranks, n, me * n, dtype, op);
        const double tol = tolerance(dtype, n_ranks);
        ASSERT_TRUE(close(ring, expected, tol));
        ASSERT_TRUE(close(small, expected, tol));
        ASSERT_TRUE(close(native, expected, tol));
        if (tol == 0 || op == ReduceOp::max || op == ReduceOp::min) {
          ASSERT_EQ(ring.to_vector<double>(), native.to_vector<double>());
        }
      }
}

TEST(MpiCollectives, AllgatherRingEqualsNative) {
  const CollectiveGroups& g = groups();
  const int n_ranks = size(), me = rank();
  for (DType dtype : kDtypes)
    for (int64_t n : {0, 1, 5, 1000}) {
      SCOPED_TRACE(::testing::Message() << "allgather of " << n << " x " << dtype);
      const Tensor in = input(me, n, dtype);
      for (auto& group : {g.ring, g.ring_small, g.native}) {
        Tensor out = full({n * n_ranks}, 3, {.dtype = dtype});
        group->allgather(out, in)->wait();
        for (int r = 0; r < n_ranks; ++r)
          ASSERT_EQ(out.narrow(0, r * n, n).to_vector<double>(),
                    input(r, n, dtype).to_vector<double>())
              << "slice of rank " << r << ", " << group->backend();
      }
    }
}

TEST(MpiCollectives, BroadcastFromEveryRootAndBarrier) {
  auto w = world_ptr();
  for (DType dtype : kDtypes)
    for (int root = 0; root < size(); ++root) {
      Tensor t = rank() == root ? input(root, 33, dtype) : zeros({33}, {.dtype = dtype});
      w->broadcast(t, root)->wait();
      ASSERT_EQ(t.to_vector<double>(), input(root, 33, dtype).to_vector<double>());
      w->barrier()->wait();
    }
}

// Work handles are asynchronous: many collectives in flight, completed in issue order.
TEST(MpiCollectives, ManyInFlightCompleteInOrder) {
  auto w = world_ptr();
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Work>> works;
  for (int k = 0; k < 20; ++k) {
    tensors.push_back(full({1000 + k}, k + rank()));
    works.push_back(w->allreduce(tensors.back(), ReduceOp::sum));
  }
  works.back()->wait();
  for (auto& work : works) EXPECT_TRUE(work->is_completed());  // the queue is first in, first out
  const int s = size();
  for (int k = 0; k < 20; ++k)
    EXPECT_EQ(tensors[k].to_vector<float>(),
              std::vector<float>(1000 + k, float(s * k + s * (s - 1) / 2)));
}

// A collective returns at once and completes in the background: rank 0 can compute while it
// waits for a late rank.
TEST(MpiCollectives, IssuingDoesNotWaitForTheOtherRanks) {
  if (size() == 1) GTEST_SKIP() << "needs two ranks";
  auto w = world_ptr();
  Tensor t = full({1 << 16}, 1);
  if (rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  auto work = w->allreduce(t, ReduceOp::sum);
  const auto issued = std::chrono::steady_clock::now() - start;
  if (rank() == 0) {
    EXPECT_LT(issued, std::chrono::milliseconds(100));
    EXPECT_FALSE(work->is_completed());  // the others are still asleep
  }
  work->wait();
  EXPECT_TRUE(work->is_completed());
  EXPECT_EQ(t.to_vector<float>()[0], float(size()));
}

// The explain sink tells each rank's chunk movement — a learner's view of the algorithm.
TEST(MpiCollectives, ExplainShowsEveryStep) {
  static auto group = new_group({.check_sequence = true});
  Tensor t = input(rank(), 10, DType::f32);
  trace::explain({"ring"});
  group->allreduce(t, ReduceOp::sum)->wait();
  trace::stop_explaining();
  std::string out;
  for (const std::string& line : trace::take_explained()) out += line + "\n";
  const int s = size();
  if (s == 1) {
    EXPECT_EQ(out, "");  // nothing moves in a world of one
    return;
  }
  const int right = (rank() + 1) % s, left = (rank() + s - 1) % s;
  for (int step = 1; step <= 2 * (s - 1); ++step) {
    const std::string phase = step < s ? "reduce-scatter" : "allgather";
    const std::regex line(
        "ring +\\[communication[^\\]]*\\] " + phase + " step " + std::to_string(step) + "/" +
        std::to_string(2 * (s - 1)) +
        " \\([0-9.]+ ms\\) — collective allreduce #[0-9]+, send chunk [0-9]+ \\[elements "
        "[0-9]+\\.\\.[0-9]+\\) to rank " +
        std::to_string(right) +
        ", receive chunk [0-9]+ \\[elements [0-9]+\\.\\.[0-9]+\\) from rank " +
        std::to_string(left) + ", (add|keep) it");
    EXPECT_TRUE(std::regex_search(out, line)) << "step " << step << " missing in:\n" << out;
  }
  EXPECT_TRUE(close(t, reference(s, 10, 0, DType::f32, ReduceOp::sum), 1e-5));
}

// Mistakes a rank can see by itself fail at once, before any message is sent (and without
// taking a sequence number, so the ranks stay in step).
TEST(MpiCollectives, BadArgumentsFailAtOnce) {
  auto w = world_ptr();
  const std::string backend = w->backend();
  EXPECT_TRUE(throws_error(
      [&] {
        w->allreduce(zeros({4, 4}).transpose(0, 1), ReduceOp::sum);
      },
      {"allreduce", backend, "contiguous", "[4, 4] f32 cpu"}));
  EXPECT_TRUE(throws_error([&] { w->allreduce(Tensor(), ReduceOp::sum); }, {"undefined"}));
  EXPECT_TRUE(throws_error([&] { w->allgather(zeros({size() * 2 + 1}), zeros({2})); },
                           {"allgather", "must hold", "x input [2] f32 cpu"}));
  EXPECT_TRUE(throws_error(
      [&] {
        w->reduce_scatter(zeros({2}), zeros({size() * 2}, {.dtype = DType::f64}), ReduceOp::sum);
      },
      {"reduce_scatter", "same dtype"}));
  EXPECT_TRUE(throws_error([&] { w->broadcast(zeros({2}), size()); }, {"broadcast", "root"}));
  EXPECT_TRUE(throws_error([&] { new_group({.ring_chunk_bytes = 0}); }, {"ring_chunk_bytes"}));
  // Still in step: a real collective afterwards works.
  Tensor t = ones({3});
  w->allreduce(t, ReduceOp::sum)->wait();
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(3, float(size())));
}

// Every MPI call goes through RG_MPI_CHECK: the error names the place, the call and MPI's words.
TEST(MpiCheck, NamesFileLineCallAndMpiErrorString) {
  // Open MPI aborts on MPI_Error_string before MPI_Init.
  if (world_ptr()->backend() != "mpi") GTEST_SKIP() << "no MPI in a world started without mpirun";
  EXPECT_TRUE(throws_error(
      [] { RG_MPI_CHECK(MPI_ERR_COUNT); },
      {"collectives_test.cpp:", "MPI_ERR_COUNT failed: ", mpi::error_string(MPI_ERR_COUNT)}));
  EXPECT_NE(mpi::error_string(MPI_ERR_COUNT), "");
  EXPECT_NO_THROW(RG_MPI_CHECK(MPI_SUCCESS));
}

}  // namespace
}  // namespace rg::parallel
