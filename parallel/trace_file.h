#pragma once
// Every rank's timeline (core/trace.h) in one Chrome / Perfetto trace file: one process per
// rank ("rank 0", "rank 1", ...), one track per thread. Open it at ui.perfetto.dev or
// chrome://tracing; docs/timeline.md walks through one.
//
//   parallel::check_trace_path(path);     // before anything runs: a clear error, nothing lost
//   parallel::start_trace(group);         // a barrier, then every rank's origin = now
//   ... the traced steps ...
//   parallel::write_trace(path, group);   // every rank's events to rank 0, which writes
//
// The ranks' clocks are aligned at the barrier: each rank takes its origin when it leaves it, so
// ts 0 is the same instant on every rank to within the barrier's skew (microseconds on one
// machine, whose processes share CLOCK_MONOTONIC anyway; across machines, the skew of one
// MPI_Ibarrier).

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/trace.h"
#include "parallel/process_group.h"

namespace rg::parallel {

// Throws rg::Error when `path` could not be written: a folder that does not exist, a path that
// is a folder. Call it before training, so that a typo costs nothing.
void check_trace_path(const std::string& path);

// A collective: a barrier, then trace::start() on every rank.
void start_trace(ProcessGroup& group);

// A collective: stops recording, sends every rank's events to rank 0 (two allgathers: the
// sizes, then the bytes), and rank 0 writes the file (a temporary beside it, then a rename, so a
// reader never sees half a file). Returns how many events this rank recorded.
int64_t write_trace(const std::string& path, ProcessGroup& group);
// The same with events taken earlier (trace::take(), gathered by the caller over several
// windows): what bench_allreduce writes.
int64_t write_trace(const std::string& path, ProcessGroup& group, const trace::Recorded& recorded);

// Every rank's `text`, on rank 0 in rank order; an empty list on the others. A collective.
std::vector<std::string> gather_text(ProcessGroup& group, const std::string& text);
// Prints every rank's text on rank 0, rank after rank: never interleaved, as ranks writing to one
// terminal at once would be. A collective.
void print_in_rank_order(ProcessGroup& group, const std::string& text, std::FILE* out = stdout);
// The explain sink's lines (core/trace.h) of every rank, "[rank r] " before each, in rank order.
void print_explained(ProcessGroup& group, std::FILE* out = stdout);

}  // namespace rg::parallel
