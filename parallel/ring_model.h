#pragma once
// The ring allreduce's cost model, fitted to a run (bench_allreduce). With N ranks and S bytes,
// each rank takes 2(N−1) steps, each one message of S/N bytes to its right neighbour:
//
//   T(S) = 2(N−1)·α + 2(N−1)/N · S/B        one step: α + (S/N)/B
//
// α is a step's fixed cost (message latency, synchronisation, the call's overhead) and B the
// bandwidth one link sustains. Small messages are all α (latency-bound), large ones all S/B
// (bandwidth-bound); the sizes where the two terms are equal, S* = N·α·B, split the two regimes.

#include <cstdint>
#include <map>
#include <vector>

#include "core/trace.h"

namespace rg::parallel {

struct RingModel {
  int ranks = 1;
  double alpha_seconds = 0;                      // α
  double bytes_per_second = 0;                   // B
  double latency_seconds() const;                // 2(N−1)·α
  double bandwidth_seconds(double bytes) const;  // 2(N−1)/N · S/B
  double seconds(double bytes) const { return latency_seconds() + bandwidth_seconds(bytes); }
  double step_seconds(double bytes) const;  // α + (S/N)/B
};

// Least squares over the sizes of the *relative* error (each measurement weighted by 1/T²), so
// that 4 KB weighs as much as 256 MB; α and 1/B enter the model linearly. Needs two distinct
// sizes; a fit that comes out with α < 0 or B <= 0 (noise) is clamped to the nearest sensible
// model on the line: α = 0, or B infinite.
RingModel fit_ring_model(int ranks, const std::vector<double>& bytes,
                         const std::vector<double>& seconds);

// The mean duration of each ring step (1-based, as in "reduce-scatter step 3/6") over the ring
// spans of a recorded trace, in seconds.
std::map<int, double> mean_ring_step_seconds(const trace::Recorded& recorded);

}  // namespace rg::parallel
