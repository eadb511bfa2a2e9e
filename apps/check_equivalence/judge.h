#pragma once
// check_equivalence's verdicts: each run's final state against the one-device state it must
// equal, within a tolerance per dtype, and the tables that show it.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "parallel/process_group.h"

namespace rg::apps {

using State = std::map<std::string, Tensor>;  // parameters and buffers by name

// Why a run is — or cannot be — bit-exact, printed with its verdict.
inline constexpr const char* kExactWithTwo =
    "bit-exact required: the same kernels with the same threads on the same shares, and a sum "
    "of two gradients (DP's reduce-add; DDP's (a + b) / 2 against the two halves of one "
    "device's mean) does not depend on the order of its additions";
inline constexpr const char* kPerShareRounding =
    "not required bit-exact: with 3 or more shares the per-share gradients are added in "
    "another order than one device's autograd adds them (DP: the reduce-add; DDP: the ring)";
inline constexpr const char* kOnGpuRounding =
    "not required bit-exact on a GPU: cuDNN may pick another algorithm for a share than for the "
    "reference, and some accumulate with atomics";
inline constexpr const char* kSyncBnRounding =
    "not bit-exact: BatchNorm statistics merged from per-share ones (Chan) instead of one pass, "
    "and each weight gradient summed per share before the reduce-add or allreduce";

inline constexpr const char* kAccumulationRounding =
    "not bit-exact: the micro-batches' gradients, each weighted by its share of the samples, are "
    "summed in .grad (and across ranks once per step), in another order than one backward over "
    "the whole batch";

struct Run {
  std::string name;       // "DP 2 + SyncBN"
  std::string reference;  // what it must equal, in words
  State state, expected;
  bool exact = false;  // must be bit-exact (else: within the dtype's tolerance)
  std::string why;     // why it is or cannot be bit-exact
  // DDP: the largest |difference| between a rank's parameters and rank 0's (every rank gets the
  // same allreduced bits from the ring, so it must be 0); negative: not checked.
  double ranks_apart = -1;
};

// Per element: |run − reference| <= atol + rtol·|reference|. Three SGD steps of this net, DP
// over 2 and 3 devices and DDP over 2 to 4 ranks, measured at most 1.1e-16 (f64) and 6e-8
// (f32) from their references — at most 1 % of these bounds; a missing 1/N, a lost bucket or
// per-device statistics move the weights by 1e-4 to 1e-2, and a gradient off by 1e-9 (the
// test-only --perturb) breaks the f64 bound 10^4 times over.
struct Tolerance {
  double atol, rtol;
};
Tolerance equivalence_tolerance(DType dtype);

// Over every rank: the largest |difference| of `params` (floating tensors, any device) from
// rank 0's. Collective: every rank calls it with the same names.
double apart_across_ranks(const std::vector<std::pair<std::string, Tensor>>& params,
                          parallel::ProcessGroup& group);

// The table of max |difference| from one device over the whole batch, tensor by tensor.
void print_differences(const State& whole, const std::vector<Run>& runs);

// One verdict per run; returns whether all passed.
bool print_verdicts(const std::vector<Run>& runs, DType dtype);

}  // namespace rg::apps
