#pragma once
// Collectives over lists of tensors, coalesced: the tensors of one dtype are packed into one
// flat buffer, so a model's 60 parameters cost one collective per dtype instead of 60.
// Every rank must pass the same list (same count, shapes and dtypes, in the same order).

#include <vector>

#include "parallel/process_group.h"

namespace rg::parallel {

// Copies root's values into every rank's tensors, in place (any layout; cpu).
void broadcast_coalesced(ProcessGroup& group, const std::vector<Tensor>& tensors, int root);

}  // namespace rg::parallel
