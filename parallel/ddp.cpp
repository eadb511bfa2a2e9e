#include "parallel/ddp.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <unordered_set>

#include "core/autograd.h"
#include "core/trace.h"
#include "ops/ops.h"
#include "parallel/coalesced.h"
#include "parallel/sync_batch_norm.h"
#include "parallel/world.h"

namespace rg::parallel {

namespace {
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::string bytes_str(int64_t bytes) {
  char buf[32];
  if (bytes >= (int64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024);
  return buf;
}

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

struct DistributedDataParallel::Reducer : std::enable_shared_from_this<Reducer> {
  struct Bucket {
    std::vector<std::size_t> params;  // indices into Reducer::params
    std::vector<int64_t> offsets;     // of each parameter in flat
    int64_t numel = 0;
    DType dtype = DType::f32;
    Tensor flat;  // the gradients' dtype, or f16 under compression
    std::shared_ptr<Work> work;
    std::size_t pending = 0;  // parameters not ready yet in this iteration
  };

  std::shared_ptr<ProcessGroup> group;
  DDPOptions options;
  std::vector<std::string> names;
  std::vector<Tensor> params;  // trainable, registration order, each once
  std::vector<Bucket> buckets;
  std::vector<std::size_t> bucket_of;

  // The current iteration.
  bool expect_sync = false;  // forward asked for synchronised gradients
  bool callback_queued = false;
  bool finished = false;  // this iteration's gradients have been synchronised
  std::vector<char> ready;
  std::size_t next_launch = 0;  // buckets launch in order: the next one to launch
  int launched_in_hooks = 0;
  Clock::time_point start;
  IterationStats last;

  // ZeRO (shard_gradients): buckets reduce-scattered; what runs when they are.
  std::vector<ShardedBucket> sharded;
  std::function<void()> on_reduced;

  void trace(const std::string& line) const {
    if (options.trace == Trace::off) return;
    char head[64];
    std::snprintf(head, sizeof head, "[ddp rank %d] %+9.3f ms  ", group->rank(), ms_since(start));
    std::cerr << (std::string(head) + line + "\n");
  }

  void begin_iteration(bool sync) {
    // A synchronised iteration whose backward never finished (it threw, or never ran): let
    // its launched allreduces complete before their buffers are reused.
    for (Bucket& b : buckets) {
      if (b.work) {
        try {
          b.work->wait();
        } catch (...) {
        }
        b.work.reset();
      }
      b.pending = b.params.size();
    }
    expect_sync = sync;
    callback_queued = false;
    finished = false;
    ready.assign(params.size(), 0);
    next_launch = 0;
    launched_in_hooks = 0;
    start = Clock::now();
  }

  // The post-accumulate hook of parameter i.
  void on_gradient(std::size_t i) {
    RG_CHECK(!finished, "DistributedDataParallel: parameter '", names[i],
             "' received a gradient after this iteration's gradients were averaged: a second "
             "backward through the same forward, or through a forward that bypassed the DDP "
             "wrapper (module().forward)? Each backward needs its own DDP forward (use "
             "no_sync() to accumulate gradients without averaging)");
    if (!expect_sync) return;
    if (!callback_queued) {
      callback_queued = true;
      queue_backward_callback([weak = weak_from_this()] {
        if (auto self = weak.lock()) self->finish();
      });
    }
    RG_CHECK(!ready[i], "DistributedDataParallel: parameter '", names[i],
             "' received a gradient twice in one iteration (a second backward through the "
             "same forward?); run forward again for each backward");
    mark_ready(i, true);
  }

  void mark_ready(std::size_t i, bool in_backward) {
    ready[i] = 1;
    Bucket& b = buckets[bucket_of[i]];
    --b.pending;
    if (options.trace == Trace::on)
      trace((in_backward ? "grad ready  " : "unused      ") + names[i] + "  (bucket " +
            std::to_string(bucket_of[i]) + ": " + std::to_string(b.pending) + " to go)");
    while (next_launch < buckets.size() && buckets[next_launch].pending == 0) {
      launch(next_launch++);
      if (in_backward) ++launched_in_hooks;
    }
  }

  void launch(std::size_t index) {
    NoGradGuard no_grad;
    Bucket& b = buckets[index];
    // The timeline: the bucket from ready (now) to reduced, as an async span whose end the
    // collective takes (trace::hand_over); the copy into the flat buffer as a span of its own.
    const std::string bucket_name = trace::on() ? "bucket " + std::to_string(index) : "";
    const uint64_t span_id =
        trace::on() ? trace::async_begin("ddp", bucket_name,
                                         trace::args("elements", b.numel, "bytes",
                                                     static_cast<int64_t>(b.flat.nbytes()),
                                                     "parameters", b.params.size()))
                    : 0;
    trace::Span copy_in("ddp", [&] { return "copy " + bucket_name + " into its buffer"; });
    const bool fp16 = options.compression == GradCompression::fp16;
    for (std::size_t j = 0; j < b.params.size(); ++j) {
      const Tensor& p = params[b.params[j]];
      const Tensor slice = b.flat.narrow(0, b.offsets[j], p.numel()).view(p.shape());
      const Tensor g = p.grad();
      if (!g.defined()) {
        fill_(slice, 0);  // unused (allowed): zeros, so every rank reduces the same bucket
        continue;
      }
      RG_CHECK(g.shape() == p.shape() && g.dtype() == p.dtype() && g.device() == p.device(),
               "DistributedDataParallel: the gradient of '", names[b.params[j]], "' is ",
               g.describe(), " but the parameter is ", p.describe());
      // f16 is summed after dividing by N, not averaged after summing: a sum of N large
      // gradients could overflow f16's 65504 before the division.
      copy_strided(slice, fp16 ? g * (1.0 / group->size()) : g);
    }
    if (options.trace == Trace::on) {
      std::string list;
      for (std::size_t k : b.params) list += (list.empty() ? "" : ", ") + names[k];
      std::ostringstream s;
      s << "launch      bucket " << index << ": allreduce " << b.numel << " x " << b.flat.dtype()
        << " (" << bytes_str(static_cast<int64_t>(b.flat.nbytes())) << ") — " << list;
      trace(s.str());
    }
    copy_in.finish();
    if (trace::on()) trace::hand_over("ddp", bucket_name, span_id);
    const ReduceOp op = fp16 ? ReduceOp::sum : ReduceOp::average;
    b.work = sharded.empty() ? group->allreduce(b.flat, op)
                             : group->reduce_scatter(sharded[index].shard, b.flat, op);
    if (trace::on()) trace::end_hand_over(trace::take_hand_over());  // done in the call
  }

  // Runs when backward has finished (the autograd callback queued by the first hook).
  void finish() {
    if (!expect_sync) return;
    expect_sync = false;  // whatever happens below, this iteration is over
    finished = true;
    std::vector<std::size_t> missing;
    for (std::size_t i = 0; i < params.size(); ++i)
      if (!ready[i]) missing.push_back(i);
    if (!missing.empty()) {
      if (options.unused_parameters == UnusedParameters::error) {
        std::ostringstream msg;
        msg << "DistributedDataParallel: " << missing.size()
            << " parameter(s) received no gradient in this backward pass, so their buckets "
               "cannot be reduced across ranks:";
        for (std::size_t i : missing) msg << "\n  " << names[i];
        msg << "\nIf they are unused on purpose (a branch taken only sometimes, a frozen "
               "head), construct DDP with DDPOptions{.unused_parameters = "
               "UnusedParameters::allow}; otherwise make the loss depend on them.";
        throw Error(msg.str());
      }
      for (std::size_t i : missing) mark_ready(i, false);
    }
    const Clock::time_point wait_start = Clock::now();
    trace::Span waiting("ddp", "wait for the buckets");
    for (Bucket& b : buckets) b.work->wait();
    if (!sharded.empty()) {  // ZeRO: each rank keeps its block; .grad stays as it is
      for (Bucket& b : buckets) b.work.reset();
      last = {true, launched_in_hooks, static_cast<int>(buckets.size()), ms_since(wait_start)};
      waiting.finish();
      on_reduced();
      return;
    }
    // Which parameters some rank used: the others keep an undefined gradient, as they would in
    // one process (so weight decay and momentum leave them alone).
    std::vector<float> used_anywhere(params.size(), 1.f);
    if (options.unused_parameters == UnusedParameters::allow) {
      Tensor used = zeros({static_cast<int64_t>(params.size())});
      float* u = used.data<float>();
      for (std::size_t i = 0; i < params.size(); ++i) u[i] = params[i].grad().defined() ? 1.f : 0.f;
      group->allreduce(used, ReduceOp::sum)->wait();
      used_anywhere = used.to_vector<float>();
    }
    const double waited = ms_since(wait_start);
    waiting.finish();
    trace::Span copy_back("ddp", "copy the averaged gradients back");
    NoGradGuard no_grad;
    for (Bucket& b : buckets) {
      for (std::size_t j = 0; j < b.params.size(); ++j) {
        Tensor p = params[b.params[j]];
        const Tensor slice = b.flat.narrow(0, b.offsets[j], p.numel()).view(p.shape());
        const Tensor g = p.grad();
        if (g.defined())
          copy_strided(g, slice);  // in place: the optimizer may hold this tensor
        else if (used_anywhere[b.params[j]] > 0)
          p.set_grad(slice.to(p.dtype()).clone());
      }
      b.work.reset();
    }
    last = {true, launched_in_hooks, static_cast<int>(buckets.size()), waited};
    if (options.trace == Trace::on) {
      char line[160];
      std::snprintf(line, sizeof line,
                    "backward ended: %d of %zu bucket(s) were launched during backward; waited "
                    "%.3f ms for the allreduces; averaged gradients copied back",
                    launched_in_hooks, buckets.size(), waited);
      trace(line);
    }
  }
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                                 std::shared_ptr<ProcessGroup> group,
                                                 DDPOptions options)
    : module_(std::move(module)), reducer_(std::make_shared<Reducer>()) {
  RG_CHECK(module_ != nullptr, "DistributedDataParallel: the module is null");
  RG_CHECK(options.bucket_cap_bytes > 0 && options.first_bucket_bytes > 0,
           "DistributedDataParallel: bucket sizes must be positive, got first ",
           options.first_bucket_bytes, " and cap ", options.bucket_cap_bytes, " bytes");
  register_wrapped_module(module_);
  set_mode(module_->is_training() ? nn::Mode::train : nn::Mode::eval);
  Reducer& r = *reducer_;
  r.group = group ? std::move(group) : world_ptr();
  r.options = options;
  std::unordered_set<const TensorImpl*> seen;  // tied weights appear under several names
  for (const auto& [name, p] : module_->named_parameters())
    if (p.requires_grad() && seen.insert(p.impl()).second) {
      r.names.push_back(name);
      r.params.push_back(p);
    }
  RG_CHECK(!r.params.empty(), "DistributedDataParallel: the ", module_->type_name(),
           " has no parameter that requires a gradient");

  // Every rank must hold the same model; say which rank does not, rather than hang or
  // silently broadcast into mismatched buffers.
  ProcessGroup& g = *r.group;
  int64_t total = 0;
  for (const Tensor& p : r.params) total += p.numel();
  Tensor mine = from_vector<int64_t>(
      {static_cast<int64_t>(r.params.size()), total, shape_hash(r.params)}, {3}, {DType::i64});
  Tensor all = empty({3 * g.size()}, {DType::i64});
  g.allgather(all, mine)->wait();
  const std::vector<int64_t> v = all.to_vector<int64_t>();
  for (int q = 1; q < g.size(); ++q)
    RG_CHECK(v[3 * q] == v[0] && v[3 * q + 1] == v[1] && v[3 * q + 2] == v[2],
             "DistributedDataParallel: rank ", q, " holds a different model than rank 0 (",
             v[3 * q], " parameters, ", v[3 * q + 1], " values vs ", v[0], " parameters, ", v[1],
             " values, or different shapes); every rank must build the same model");

  std::vector<Tensor> state = r.params;
  for (const auto& [_, b] : module_->named_buffers()) state.push_back(b);
  broadcast_coalesced(g, state, 0);

  // Buckets: parameters in reverse registration order, one open bucket per dtype and device;
  // a bucket closes once it reaches its limit — the first of each kind a small one, so the
  // first allreduce starts after only a few layers' backward.
  struct Open {
    DType dtype;
    Device device;
    std::size_t bucket;  // npos: closed, the next parameter opens a new one
    int64_t bytes;
    bool first;
  };
  constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::vector<Open> open;
  std::vector<Reducer::Bucket> made;
  r.bucket_of.assign(r.params.size(), 0);
  for (std::size_t k = r.params.size(); k-- > 0;) {
    const Tensor& p = r.params[k];
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
    Reducer::Bucket& b = made[it->bucket];
    b.params.push_back(k);
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
    it->bytes += static_cast<int64_t>(p.nbytes());
    if (it->bytes >= (it->first ? options.first_bucket_bytes : options.bucket_cap_bytes)) {
      it->bucket = npos;
      it->first = false;
    }
  }
  for (std::size_t bi = 0; bi < made.size(); ++bi) {
    Reducer::Bucket& b = made[bi];
    const DType wire = options.compression == GradCompression::fp16 ? DType::f16 : b.dtype;
    b.flat = zeros({b.numel}, {wire, r.params[b.params[0]].device()});
    b.pending = b.params.size();
    for (std::size_t k : b.params) r.bucket_of[k] = bi;
  }
  r.buckets = std::move(made);
  r.ready.assign(r.params.size(), 0);

  for (std::size_t i = 0; i < r.params.size(); ++i)
    r.params[i].register_post_accumulate_hook(
        [weak = std::weak_ptr<Reducer>(reducer_), i](const Tensor&) {
          if (auto self = weak.lock()) self->on_gradient(i);
        });
}

DistributedDataParallel::~DistributedDataParallel() {
  for (auto& b : reducer_->buckets)
    if (b.work) try {
        b.work->wait();
      } catch (...) {
      }
}

ProcessGroup& DistributedDataParallel::group() const {
  return *reducer_->group;
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  Reducer& r = *reducer_;
  // Only a forward that records a graph starts an iteration: a no-grad forward (evaluation,
  // logging) between a forward and its backward leaves that iteration alone. Training mode does
  // not matter for gradients (fine-tuning with frozen BatchNorm still averages them); it does
  // for buffers, which only training forwards update.
  const bool records = GradMode::is_enabled();
  const bool sync = records && !no_sync_;
  if (records) r.begin_iteration(sync);
  if (sync && is_training() && r.options.broadcast_buffers == BroadcastBuffers::forward) {
    // SyncBatchNorm's running statistics are equal on every rank already.
    std::unordered_set<const TensorImpl*> synced;
    for (const auto& [_, m] : module_->named_modules())
      if (dynamic_cast<const SyncBatchNorm*>(m))
        for (const auto& [__, b] : m->named_buffers()) synced.insert(b.impl());
    std::vector<Tensor> buffers;
    for (const auto& [_, b] : module_->named_buffers())
      if (!synced.count(b.impl())) buffers.push_back(b);
    if (!buffers.empty()) {
      trace::Span span("ddp", "broadcast buffers from rank 0");
      broadcast_coalesced(*r.group, buffers, 0);
    }
  }
  if (sync)
    r.trace("forward: synchronised iteration, " + std::to_string(r.buckets.size()) + " bucket(s)");
  Tensor out = module_->forward(x);
  if (sync && r.options.unused_parameters == UnusedParameters::allow) {
    // The parameters backward cannot reach are ready now: their buckets need not wait.
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
    for (std::size_t i = 0; i < r.params.size(); ++i) {
      const AutogradMeta* meta = r.params[i].impl()->autograd.get();
      const std::shared_ptr<Node> acc = meta ? meta->grad_accumulator.lock() : nullptr;
      if (!acc || !reached.count(acc.get())) r.mark_ready(i, false);
    }
  }
  return out;
}

std::string DistributedDataParallel::extra_repr() const {
  return "world " + std::to_string(reducer_->group->size()) + ", " +
         std::to_string(reducer_->buckets.size()) + " bucket(s)";
}

std::vector<BucketInfo> DistributedDataParallel::buckets() const {
  std::vector<BucketInfo> out;
  for (const auto& b : reducer_->buckets) {
    BucketInfo info{{}, b.numel, b.dtype};
    for (std::size_t k : b.params) info.params.push_back(reducer_->names[k]);
    out.push_back(std::move(info));
  }
  return out;
}

DistributedDataParallel::IterationStats DistributedDataParallel::last_iteration() const {
  return reducer_->last;
}

void DistributedDataParallel::shard_gradients(std::function<void()> reduced) {
  Reducer& r = *reducer_;
  if (!reduced) {  // back to allreduce (a ZeRO whose construction failed)
    for (Reducer::Bucket& b : r.buckets)
      b.flat = zeros({b.numel}, {b.flat.dtype(), b.flat.device()});
    r.sharded.clear();
    r.on_reduced = nullptr;
    return;
  }
  RG_CHECK(r.sharded.empty(),
           "DistributedDataParallel: its gradients are sharded already (one "
           "ZeRO optimizer per DDP)");
  RG_CHECK(r.options.unused_parameters == UnusedParameters::error,
           "ZeRO: DDPOptions::unused_parameters must be 'error' (a parameter no rank used would "
           "get a zero gradient and a step, where DDP leaves it alone)");
  const int64_t n = r.group->size();
  for (Reducer::Bucket& b : r.buckets) {
    ShardedBucket s;
    s.params = b.params;
    s.offsets = b.offsets;
    s.numel = b.numel;
    const int64_t block = (b.numel + n - 1) / n;
    s.padded = block * n;
    // The padding stays zero: no parameter is copied there, and zeros reduce to zeros.
    b.flat = zeros({s.padded}, {b.flat.dtype(), b.flat.device()});
    s.flat = b.flat;
    s.shard = zeros({block}, {b.flat.dtype(), b.flat.device()});
    r.sharded.push_back(std::move(s));
  }
  r.on_reduced = std::move(reduced);
}

const std::vector<DistributedDataParallel::ShardedBucket>&
DistributedDataParallel::sharded_buckets() const {
  return reducer_->sharded;
}

const std::vector<Tensor>& DistributedDataParallel::trained_parameters() const {
  return reducer_->params;
}

const std::vector<std::string>& DistributedDataParallel::trained_parameter_names() const {
  return reducer_->names;
}

}  // namespace rg::parallel
