// The ring allreduce over an in-process transport (threads as ranks, queues as wires): every
// dtype, op and awkward size against a plain reference, without MPI. The MPI programs in
// tests/parallel_mpi/ check it again against MPI_Allreduce across real processes.
#include "parallel/ring_allreduce.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <regex>

#include "core/dispatch.h"
#include "core/trace.h"
#include "parallel/reduce.h"
#include "parallel/thread_group.h"
#include "parallel/thread_transport.h"
#include "tests/support/fixtures.h"

namespace rg::parallel {
namespace {
using rg::testing::throws_error;

// Rank r's input: small integers (exact in every dtype, so sums are exact too) that differ by
// rank and position.
Tensor input(int rank, int64_t n, DType dtype) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = double((i * 7 + rank * 13) % 23);
  return from_vector(v, {n}, {.dtype = dtype});
}

Tensor reference(int ranks, int64_t n, DType dtype, ReduceOp op) {
  std::vector<double> acc(static_cast<std::size_t>(n));
  for (int r = 0; r < ranks; ++r) {
    const std::vector<double> x = input(r, n, dtype).to_vector<double>();
    for (std::size_t i = 0; i < acc.size(); ++i)
      acc[i] = r == 0                ? x[i]
               : op == ReduceOp::max ? std::max(acc[i], x[i])
               : op == ReduceOp::min ? std::min(acc[i], x[i])
                                     : acc[i] + x[i];
  }
  Tensor t = from_vector(acc, {n}, {.dtype = dtype});
  // The division rule itself is reduce.h's; what is under test here is the data movement.
  if (op == ReduceOp::average) divide_by(t.data_ptr(), n, dtype, ranks);
  return t;
}

TEST(RingAllreduce, EqualsReferenceForEveryDtypeOpAndSize) {
  struct Case {
    DType dtype;
    ReduceOp op;
    int64_t n;
  };
  std::vector<Case> cases;
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::u8})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::average, ReduceOp::max, ReduceOp::min})
      for (int64_t n : {0, 1, 2, 3, 4, 5, 7, 17, 100}) cases.push_back({dtype, op, n});
  for (int ranks : {1, 2, 3, 5})
    for (int64_t chunk_bytes : {int64_t{3}, int64_t{1} << 20}) {  // 3: not whole elements
      Wires wires(ranks);
      // results[r][k]: rank r's result of case k; one thread per rank runs every case in turn.
      std::vector<std::vector<Tensor>> results(static_cast<std::size_t>(ranks));
      run_ranks(ranks, [&](int r) {
        ThreadTransport t(wires, r);
        for (const Case& c : cases) {
          Tensor x = input(r, c.n, c.dtype);
          ring_allreduce(t, x.data_ptr(), c.n, c.dtype, c.op, {.chunk_bytes = chunk_bytes});
          results[static_cast<std::size_t>(r)].push_back(x);
        }
      });
      for (std::size_t k = 0; k < cases.size(); ++k) {
        const Case& c = cases[k];
        SCOPED_TRACE(::testing::Message()
                     << ranks << " ranks, " << c.n << " x " << c.dtype << " "
                     << reduce_op_name(c.op) << ", messages of " << chunk_bytes << " bytes");
        const Tensor expected = reference(ranks, c.n, c.dtype, c.op);
        for (int r = 0; r < ranks; ++r)
          ASSERT_EQ(results[static_cast<std::size_t>(r)][k].to_vector<double>(),
                    expected.to_vector<double>());
      }
    }
}

TEST(RingAllreduce, ReduceScatterAndAllgatherHalves) {
  const int ranks = 3;
  const int64_t block = 5;
  Wires wires(ranks);
  std::vector<Tensor> scattered(ranks), gathered(ranks);
  run_ranks(ranks, [&](int r) {
    ThreadTransport t(wires, r);
    Tensor x = input(r, ranks * block, DType::f32);
    ring_reduce_scatter(t, x.data_ptr(), block, DType::f32, ReduceOp::sum, {.chunk_bytes = 8});
    scattered[static_cast<std::size_t>(r)] = x.narrow(0, r * block, block).clone();
    Tensor g = zeros({ranks * block});
    g.narrow(0, r * block, block).data<float>()[0] = float(r + 1);
    ring_allgather(t, g.data_ptr(), block, DType::f32, {.chunk_bytes = 8});
    gathered[static_cast<std::size_t>(r)] = g;
  });
  const Tensor sum = reference(ranks, ranks * block, DType::f32, ReduceOp::sum);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(scattered[r].to_vector<float>(), sum.narrow(0, r * block, block).to_vector<float>());
    EXPECT_EQ(gathered[r].to_vector<float>(),
              (std::vector<float>{1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0}));
  }
}

// The explain sink is for reading: it must say exactly which chunk moves where.
TEST(RingAllreduce, ExplainNamesEveryChunkMovement) {
  const int ranks = 3;
  Wires wires(ranks);
  trace::explain({"ring"});
  run_ranks(ranks, [&](int r) {
    ThreadTransport t(wires, r);
    Tensor x = input(r, 8, DType::f32);
    ring_allreduce(t, x.data_ptr(), 8, DType::f32, ReduceOp::sum, {.label = "allreduce #1"});
  });
  trace::stop_explaining();
  // Rank 1's lines (it receives from rank 0), without the times.
  std::vector<std::string> lines;
  const std::regex took(" \\([0-9.]+ ms\\)");
  for (const std::string& line : trace::take_explained())
    if (line.find("from rank 0") != std::string::npos)
      lines.push_back(std::regex_replace(line.substr(line.find("ring")), took, ""));
  // 8 elements in 3 chunks: [0..3) [3..6) [6..8).
  const std::string head = "ring     reduce-scatter step ";
  EXPECT_EQ(lines, (std::vector<std::string>{
                       head + "1/4 — collective allreduce #1, send chunk 0 [elements 0..3) to rank "
                              "2, receive chunk 2 [elements 6..8) from rank 0, add it, sent_bytes "
                              "12 B, received_bytes 8 B",
                       head + "2/4 — collective allreduce #1, send chunk 2 [elements 6..8) to rank "
                              "2, receive chunk 1 [elements 3..6) from rank 0, add it, sent_bytes "
                              "8 B, received_bytes 12 B",
                       "ring     allgather step 3/4 — collective allreduce #1, send chunk 1 "
                       "[elements 3..6) to rank 2, receive chunk 0 [elements 0..3) from rank 0, "
                       "keep it, sent_bytes 12 B, received_bytes 12 B",
                       "ring     allgather step 4/4 — collective allreduce #1, send chunk 0 "
                       "[elements 0..3) to rank 2, receive chunk 2 [elements 6..8) from rank 0, "
                       "keep it, sent_bytes 12 B, received_bytes 8 B"}));
}

// A transport error reaches the caller with the step and the chunks in flight.
TEST(RingAllreduce, ErrorsNameTheStep) {
  class Broken final : public Transport {
   public:
    int rank() const override { return 0; }
    int size() const override { return 2; }
    void send_recv(const void*, std::size_t, int, void*, std::size_t, int) override {
      fail("timed out waiting for rank 1");
    }
  } broken;
  Tensor x = zeros({4});
  EXPECT_TRUE(throws_error(
      [&] {
        ring_allreduce(broken, x.data_ptr(), 4, DType::f32, ReduceOp::sum,
                       {.label = "allreduce #7"});
      },
      {"step 1/2 reduce-scatter (sending chunk 1 to rank 1, receiving chunk 0 from "
       "rank 1): timed out waiting for rank 1"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ring_allreduce(broken, x.data_ptr(), 4, DType::f32, ReduceOp::sum, {.chunk_bytes = 0});
      },
      {"ring chunk size must be positive"}));
}

}  // namespace
}  // namespace rg::parallel
