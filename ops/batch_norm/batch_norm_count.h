#pragma once
// BatchNorm's batch counter (PyTorch's num_batches_tracked), counted on its own device: kept out
// of batch_norm.h (and so out of ops/ops.h), since only the BatchNorm layers call it.

#include "core/tensor.h"

namespace rg {

// num_batches_tracked += 1 in place, on its device, without reading it back (on a GPU a read per
// layer per step would stall every step): one kernel there. num_batches_tracked: a contiguous
// i64 tensor (a scalar in the layers; every element counts).
void batch_norm_count_batch(const Tensor& num_batches_tracked);

}  // namespace rg
