#include "parallel/ddp_helpers.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "core/autograd.h"
#include "parallel/coalesced.h"
#include "parallel/sync_batch_norm.h"

namespace rg::parallel {

namespace {
// FNV-1a over the parameters' shapes and dtypes: equal on every rank iff the models match.
int64_t shape_hash(const std::vector<Tensor>& params) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  for (const Tensor& p : params) {
    mix(static_cast<uint64_t>(p.dtype()));
    mix(static_cast<uint64_t>(p.dim()));
    for (int64_t s : p.shape()) mix(static_cast<uint64_t>(s));
  }
  return static_cast<int64_t>(h);
}
}  // namespace

std::vector<BucketInfo> assign_buckets(const std::vector<Tensor>& params,
                                       const std::vector<std::string>& names,
                                       const DDPOptions& options) {
  struct Open {
    DType dtype;
    Device device;
    std::size_t bucket;  // npos: closed, the next parameter opens a new one
    int64_t bytes;
    bool first;
  };
  constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::vector<Open> open;
  std::vector<BucketInfo> made;
  for (std::size_t k = params.size(); k-- > 0;) {
    const Tensor& p = params[k];
    auto it = std::find_if(open.begin(), open.end(), [&](const Open& o) {
      return o.dtype == p.dtype() && o.device == p.device();
    });
    if (it == open.end()) {
      open.push_back({p.dtype(), p.device(), npos, 0, true});
      it = open.end() - 1;
    }
    if (it->bucket == npos) {
      it->bucket = made.size();
      it->bytes = 0;
      made.emplace_back();
      made.back().dtype = p.dtype();
    }
    BucketInfo& b = made[it->bucket];
    b.params.push_back(names[k]);
    b.param_index.push_back(k);
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
    it->bytes += static_cast<int64_t>(p.nbytes());
    if (it->bytes >= (it->first ? options.first_bucket_bytes : options.bucket_cap_bytes)) {
      it->bucket = npos;
      it->first = false;
    }
  }
  return made;
}

void check_same_model(ProcessGroup& g, const std::vector<Tensor>& params) {
  int64_t total = 0;
  for (const Tensor& p : params) total += p.numel();
  Tensor mine = from_vector<int64_t>(
      {static_cast<int64_t>(params.size()), total, shape_hash(params)}, {3}, {DType::i64});
  Tensor all = empty({3 * g.size()}, {DType::i64});
  g.allgather(all, mine)->wait();
  const std::vector<int64_t> v = all.to_vector<int64_t>();
  for (int q = 1; q < g.size(); ++q)
    RG_CHECK(v[3 * q] == v[0] && v[3 * q + 1] == v[1] && v[3 * q + 2] == v[2],
             "DistributedDataParallel: rank ", q, " holds a different model than rank 0 (",
             v[3 * q], " parameters, ", v[3 * q + 1], " values vs ", v[0], " parameters, ", v[1],
             " values, or different shapes); every rank must build the same model");
}

void broadcast_buffers(nn::Module& module, ProcessGroup& group) {
  std::unordered_set<const TensorImpl*> synced;
  for (const auto& [_, m] : module.named_modules())
    if (dynamic_cast<const SyncBatchNorm*>(m))
      for (const auto& [__, b] : m->named_buffers()) synced.insert(b.impl());
  std::vector<Tensor> buffers;
  for (const auto& [_, b] : module.named_buffers())
    if (!synced.count(b.impl())) buffers.push_back(b);
  if (buffers.empty()) return;
  const trace::Span span("ddp", "broadcast buffers from rank 0");
  broadcast_coalesced(group, buffers, 0);
}

std::vector<std::size_t> unreachable_parameters(const Tensor& out,
                                                const std::vector<Tensor>& params) {
  std::unordered_set<const Node*> reached;
  std::vector<const Node*> stack;
  if (out.defined() && out.grad_fn()) {
    reached.insert(out.grad_fn().get());
    stack.push_back(out.grad_fn().get());
  }
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges)
      if (e.node && reached.insert(e.node.get()).second) stack.push_back(e.node.get());
  }
  std::vector<std::size_t> unreachable;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const AutogradMeta* meta = params[i].impl()->autograd.get();
    const std::shared_ptr<Node> acc = meta ? meta->grad_accumulator.lock() : nullptr;
    if (!acc || !reached.count(acc.get())) unreachable.push_back(i);
  }
  return unreachable;
}

trace::Label ready_label(Arrival arrival, const std::string& name, std::size_t bucket,
                         std::size_t to_go) {
  return {(arrival == Arrival::in_backward ? "gradient ready " : "unused (zeros) ") + name,
          trace::args("bucket", bucket, "to go", to_go)};
}

trace::Label bucket_label(std::size_t index, const BucketInfo& info, const Tensor& buffer) {
  std::string list;
  for (const std::string& name : info.params) list += (list.empty() ? "" : " ") + name;
  return {"bucket " + std::to_string(index),
          trace::args("elements", info.numel, "dtype", std::string(dtype_name(info.dtype)), "bytes",
                      static_cast<int64_t>(buffer.nbytes()), "parameters", list)};
}

std::string unused_parameters_error(const std::vector<std::string>& names,
                                    const std::vector<std::size_t>& missing) {
  std::ostringstream msg;
  msg << "DistributedDataParallel: " << missing.size()
      << " parameter(s) received no gradient in this backward pass, so their buckets "
         "cannot be reduced across ranks:";
  for (std::size_t i : missing) msg << "\n  " << names[i];
  msg << "\nIf they are unused on purpose (a branch taken only sometimes, a frozen "
         "head), construct DDP with DDPOptions{.unused_parameters = "
         "UnusedParameters::allow}; otherwise make the loss depend on them.";
  return msg.str();
}

std::string second_backward_error(const std::string& name) {
  return "DistributedDataParallel: parameter '" + name +
         "' received a gradient after this iteration's gradients were averaged: a second "
         "backward through the same forward, or through a forward that bypassed the DDP "
         "wrapper (module().forward)? Each backward needs its own DDP forward (use no_sync() "
         "to accumulate gradients without averaging)";
}

std::string twice_in_one_backward_error(const std::string& name) {
  return "DistributedDataParallel: parameter '" + name +
         "' received a gradient twice in one iteration (a second backward through the same "
         "forward?); run forward again for each backward";
}

}  // namespace rg::parallel
