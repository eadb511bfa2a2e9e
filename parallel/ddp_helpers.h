#pragma once
// What DDP's algorithm (ddp.cpp) calls but is not the algorithm: the bucket assignment, the
// check that every rank holds the same model, the walk of the graph for unused parameters, and
// the text of its trace events and errors.

#include <string>
#include <vector>

#include "core/trace.h"
#include "parallel/ddp.h"

namespace rg::parallel {

// Buckets: parameters in reverse registration order (backward produces the last layer's
// gradients first), one open bucket per dtype and device; a bucket closes once it reaches its
// cap — the first of each kind at first_bucket_bytes, so the first reduction starts after only a
// few layers' backward.
std::vector<BucketInfo> assign_buckets(const std::vector<Tensor>& params,
                                       const std::vector<std::string>& names,
                                       const DDPOptions& options);

// Every rank must hold the same model: throws naming the rank that does not, rather than hang
// or broadcast into mismatched buffers. A collective.
void check_same_model(ProcessGroup& group, const std::vector<Tensor>& params);

// Rank 0's buffers (BatchNorm's running statistics) to every rank, so the replicas stay alike:
// all but SyncBatchNorm's, equal on every rank already. A collective.
void broadcast_buffers(nn::Module& module, ProcessGroup& group);

// Indices of the parameters that backward from `out` cannot reach (no path from its graph to
// their gradient accumulators).
std::vector<std::size_t> unreachable_parameters(const Tensor& out,
                                                const std::vector<Tensor>& params);

// How a parameter became ready: its gradient arrived in backward, or it is unused this
// iteration (its bucket counts it as zeros).
enum class Arrival { in_backward, unused };

// ---- text --------------------------------------------------------------------------------------
trace::Label ready_label(Arrival arrival, const std::string& name, std::size_t bucket,
                         std::size_t to_go);
trace::Label bucket_label(std::size_t index, const BucketInfo& info, const Tensor& buffer);
std::string unused_parameters_error(const std::vector<std::string>& names,
                                    const std::vector<std::size_t>& missing);
std::string second_backward_error(const std::string& name);
std::string twice_in_one_backward_error(const std::string& name);

}  // namespace rg::parallel
