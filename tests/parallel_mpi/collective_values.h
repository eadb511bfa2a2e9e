#pragma once
// The inputs and expected results of the collective tests (collectives_test.cpp over MPI,
// cuda/nccl_collectives_test.cpp over NCCL): each rank's input is a function of rank and
// position, so every rank can compute every other rank's and check a result by itself.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "parallel/reduce.h"
#include "parallel/world.h"

namespace rg::parallel::testing {

// Rank r's value at position i: floats in [-1, 1) that differ everywhere; for integers small
// values whose sums are exact (u8 sums wrap, the same way in both algorithms and here).
inline double value(int r, int64_t i, DType dtype) {
  const uint64_t h =
      (static_cast<uint64_t>(i) * 2654435761u + static_cast<uint64_t>(r) * 40503u + 12345u) %
      1000003u;
  if (dtype == DType::i64) return static_cast<double>(static_cast<int64_t>(h % 2001) - 1000);
  if (dtype == DType::u8) return static_cast<double>(h % 97);
  return static_cast<double>(h) / 500001.5 - 1.0;
}

inline Tensor input(int r, int64_t n, DType dtype) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value(r, i, dtype);
  return from_vector(v, {n}, {.dtype = dtype});
}

// The reduction over all ranks computed here in double from everybody's inputs (after they
// were rounded to dtype), then rounded once to dtype.
inline Tensor reference(int ranks, int64_t n, int64_t first, DType dtype, ReduceOp op) {
  std::vector<double> acc(static_cast<std::size_t>(n));
  for (int r = 0; r < ranks; ++r) {
    const std::vector<double> x =
        input(r, first + n, dtype).narrow(0, first, n).to_vector<double>();
    for (std::size_t i = 0; i < acc.size(); ++i)
      acc[i] = r == 0                ? x[i]
               : op == ReduceOp::max ? std::max(acc[i], x[i])
               : op == ReduceOp::min ? std::min(acc[i], x[i])
                                     : acc[i] + x[i];
  }
  const bool sums = op == ReduceOp::sum || op == ReduceOp::average;
  for (double& a : acc) {
    if (sums && dtype == DType::u8) a = std::fmod(a, 256);  // u8 sums wrap, then divide
    if (op == ReduceOp::average) a = is_floating(dtype) ? a / ranks : std::trunc(a / ranks);
  }
  return from_vector(acc, {n}, {.dtype = dtype});
}

// Floats: each algorithm adds in its own order and 16-bit types round after every step.
inline double tolerance(DType dtype, int ranks) {
  switch (dtype) {
    case DType::f32:
      return 1e-6 * ranks;
    case DType::f64:
      return 1e-14 * ranks;
    case DType::f16:
      return 2e-3 * ranks;
    case DType::bf16:
      return 1.6e-2 * ranks;
    default:
      return 0;
  }
}

inline const std::vector<DType> kDtypes{DType::f32,  DType::f64, DType::f16,
                                        DType::bf16, DType::i64, DType::u8};
inline const std::vector<ReduceOp> kOps{ReduceOp::sum, ReduceOp::average, ReduceOp::max,
                                        ReduceOp::min};

// The groups the collective tests run on: the ring allreduce, the ring in messages of 36 bytes
// (several steps per chunk; not a multiple of 8: messages of 4 f64, 18 f16, 36 u8) and the
// library's own algorithm. Collective: every rank makes them at the same point, in this order.
struct CollectiveGroups {
  std::shared_ptr<ProcessGroup> ring, ring_small, native;
};
inline CollectiveGroups make_collective_groups(std::chrono::seconds timeout) {
  const ProcessGroupOptions base{.timeout = timeout, .check_sequence = true};
  ProcessGroupOptions ring = base, small = base, native = base;
  ring.algorithm = small.algorithm = AllreduceAlgorithm::ring;
  small.ring_chunk_bytes = 36;
  native.algorithm = AllreduceAlgorithm::native;
  return {new_group(ring), new_group(small), new_group(native)};
}

}  // namespace rg::parallel::testing
