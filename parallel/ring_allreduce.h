#pragma once
// The ring allreduce, written out: N ranks in a ring, the data cut into N chunks.
//
//   reduce-scatter, N−1 steps: in step s rank r sends chunk (r−s−1) mod N to rank r+1 and
//     receives chunk (r−s−2) mod N from rank r−1, adding it to its own copy. After N−1 steps
//     rank r holds chunk r reduced over all ranks.
//   allgather, N−1 steps: in step s rank r sends chunk (r−s) mod N (complete) to rank r+1 and
//     receives chunk (r−s−1) mod N from rank r−1, keeping it.
//
// Each rank sends 2(N−1) chunks of bytes/N: 2(N−1)/N · bytes in all, nearly independent of N —
// why the ring is bandwidth-optimal and why nccl-tests reports "bus bandwidth" as
// algbw · 2(N−1)/N. Chunks go out in messages of at most RingOptions::chunk_bytes, so the
// receive buffer stays small whatever the tensor size. Sizes need not divide by N: chunk c
// covers [c·⌊n/N⌋ + min(c, n mod N), …), so chunks differ by at most one element and some are
// empty when n < N. docs/learn/README.md (the ring's lesson) has a worked trace.

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "parallel/process_group.h"
#include "parallel/transport.h"

namespace rg::parallel {

// Each step is a span of the timeline ("ring": core/trace.h) with what it moved; the explain
// sink tells the same steps as text ("reduce-scatter step 1/6 — send chunk 3 [elements 12..16)
// to rank 1, receive chunk 2 [8..12) from rank 3, add it").
struct RingOptions {
  int64_t chunk_bytes = 1 << 20;  // the largest message (ProcessGroupOptions::ring_chunk_bytes)
  std::string label = "ring";     // names the collective in traces, e.g. "allreduce #4"
};

// data: count elements of dtype, reduced in place; equal on every rank afterwards.
void ring_allreduce(Transport& transport, void* data, int64_t count, DType dtype, ReduceOp op,
                    const RingOptions& options);

// data: size · block elements. Afterwards block r of rank r holds the reduction of every rank's
// block r (divided for average); the other blocks hold partial sums.
void ring_reduce_scatter(Transport& transport, void* data, int64_t block, DType dtype, ReduceOp op,
                         const RingOptions& options);

// data: size · block elements, with block r filled on rank r; afterwards every block is filled.
void ring_allgather(Transport& transport, void* data, int64_t block, DType dtype,
                    const RingOptions& options);

}  // namespace rg::parallel
