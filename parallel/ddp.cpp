#include "parallel/ddp.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "core/autograd.h"
#include "core/trace.h"
#include "ops/ops.h"
#include "parallel/coalesced.h"
#include "parallel/ddp_helpers.h"
#include "parallel/world.h"

namespace rg::parallel {

struct DistributedDataParallel::Reducer : std::enable_shared_from_this<Reducer> {
  struct Bucket {
    BucketInfo info;
    Tensor buffer;  // (info.numel, padded): the gradients' views live here
    std::shared_ptr<Work> work;
    std::size_t pending = 0;  // parameters not ready yet in this iteration
  };

  std::shared_ptr<ProcessGroup> group;
  DDPOptions options;
  CommHook hook = allreduce_hook;
  bool custom_hook = false;
  std::vector<std::string> names;
  std::vector<Tensor> params;  // trainable, registration order, each once
  std::vector<Bucket> buckets;
  std::vector<std::size_t> bucket_of;
  std::vector<Tensor> slots;  // parameter i's gradient view into its bucket's buffer

  // The current iteration.
  bool expect_sync = false;  // forward asked for synchronised gradients
  bool callback_queued = false;
  bool finished = false;        // this iteration's gradients have been synchronised
  std::vector<char> ready;      // parameter i's gradient is in its bucket
  std::vector<char> used;       // parameter i got a gradient since the last synchronised backward
  std::size_t next_launch = 0;  // buckets launch in order: the next one to launch
  IterationStats last;

  void begin_iteration(bool sync) {
    drain();
    for (Bucket& b : buckets) b.pending = b.info.params.size();
    expect_sync = sync;
    callback_queued = finished = false;
    ready.assign(params.size(), 0);
    next_launch = 0;
  }

  // The post-accumulate hook of parameter i.
  void on_gradient(std::size_t i) {
    RG_CHECK(!finished && !ready[i], arrival_error(i));
    used[i] = 1;
    use_slot(i);  // no_sync's accumulation goes into the bucket too
    if (!expect_sync) return;
    if (!callback_queued) {  // once per backward: finish() when backward is over
      callback_queued = true;
      queue_backward_callback([weak = weak_from_this()] {
        if (auto self = weak.lock()) self->finish();
      });
    }
    mark_ready(i, Arrival::in_backward);
  }

  // Makes parameter i's gradient its bucket slot: once, by a copy, after a gradient arrived
  // elsewhere (the first backward, or after zero_grad dropped it); a parameter without one
  // counts as zeros there.
  void use_slot(std::size_t i) {
    Tensor p = params[i];
    const Tensor g = p.grad();
    if (!g.defined()) {
      fill_(slots[i], 0);
    } else if (!(p.grad_is_view() && g.data_ptr() == slots[i].data_ptr())) {
      copy_strided(slots[i], g);
      p.set_grad_view(slots[i]);
    }
  }

  void mark_ready(std::size_t i, Arrival arrival) {
    if (arrival == Arrival::unused) use_slot(i);
    ready[i] = 1;
    Bucket& b = buckets[bucket_of[i]];
    --b.pending;
    trace::instant("ddp", [&] { return ready_label(arrival, names[i], bucket_of[i], b.pending); });
    // Buckets go in order: a bucket complete early waits for the ones before it.
    while (next_launch < buckets.size() && buckets[next_launch].pending == 0) launch(next_launch++);
  }

  // Hands a complete bucket to the communication hook.
  void launch(std::size_t index) {
    NoGradGuard no_grad;
    Bucket& b = buckets[index];
    const trace::HandedSpan span("ddp", [&] { return bucket_label(index, b.info, b.buffer); });
    GradBucket bucket{index, b.buffer, b.info.numel};
    b.work = hook(*group, bucket);
  }

  // Runs when backward has finished (the autograd callback queued by the first hook).
  void finish() {
    if (!expect_sync) return;
    expect_sync = false;  // whatever happens below, this iteration is over
    finished = true;
    const auto overlapped = static_cast<int>(next_launch);  // launched before backward ended
    for (std::size_t i : missing_gradients()) mark_ready(i, Arrival::unused);
    const double waited = wait_for_buckets();
    if (options.unused_parameters == UnusedParameters::allow) drop_gradients_no_rank_used();
    last = {true, overlapped, static_cast<int>(buckets.size()), waited * 1e3};
    used.assign(params.size(), 0);
  }

  std::string arrival_error(std::size_t i) const {
    return finished ? second_backward_error(names[i]) : twice_in_one_backward_error(names[i]);
  }

  // The parameters that got no gradient; an error naming them unless unused ones are allowed.
  std::vector<std::size_t> missing_gradients() const {
    std::vector<std::size_t> missing;
    for (std::size_t i = 0; i < params.size(); ++i)
      if (!ready[i]) missing.push_back(i);
    if (!missing.empty() && options.unused_parameters == UnusedParameters::error)
      throw Error(unused_parameters_error(names, missing));
    return missing;
  }

  // Waits for every bucket's reduction; returns the seconds it took.
  double wait_for_buckets() {
    double seconds = 0;
    trace::Span span("ddp", "wait for the buckets", &seconds);
    for (Bucket& b : buckets) std::exchange(b.work, nullptr)->wait();
    span.finish();
    return seconds;
  }

  // An iteration whose backward never finished (it threw, or never ran): its reductions end
  // before their buffers are reused (their errors were reported by then).
  void drain() {
    for (Bucket& b : buckets) {
      if (!b.work) continue;
      try {
        std::exchange(b.work, nullptr)->wait();
      } catch (...) {
      }
    }
  }

  // A parameter that no rank used keeps an undefined gradient, as it would in one process (so
  // weight decay and momentum leave it alone); one some rank used has the average in its slot.
  void drop_gradients_no_rank_used() {
    Tensor used_anywhere = zeros({static_cast<int64_t>(params.size())});
    float* u = used_anywhere.data<float>();
    for (std::size_t i = 0; i < params.size(); ++i) u[i] = used[i] ? 1.f : 0.f;
    group->allreduce(used_anywhere, ReduceOp::sum)->wait();
    for (std::size_t i = 0; i < params.size(); ++i)
      if (u[i] == 0)
        Tensor(params[i]).set_grad(Tensor());
      else if (!params[i].grad_is_view())
        Tensor(params[i]).set_grad_view(slots[i]);
  }

  // (Re)allocates the buckets' buffers, each padded to a multiple of pad_to; gradients that
  // were views into the old buffers move to the new ones.
  void allocate_buffers(int64_t pad_to) {
    for (Bucket& b : buckets) {
      const int64_t padded = (b.info.numel + pad_to - 1) / pad_to * pad_to;
      b.buffer = zeros({padded}, {b.info.dtype, params[b.info.param_index[0]].device()});
    }
    slots.resize(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      const Bucket& b = buckets[bucket_of[i]];
      const auto j = static_cast<std::size_t>(
          std::find(b.info.param_index.begin(), b.info.param_index.end(), i) -
          b.info.param_index.begin());
      const Tensor& p = params[i];
      Tensor slot = b.buffer.view_slice_as(b.info.offsets[j], p.shape(), p.suggest_memory_format());
      const Tensor g = p.grad();
      if (p.grad_is_view() && slots[i].defined() && g.data_ptr() == slots[i].data_ptr()) {
        copy_strided(slot, g);
        Tensor(p).set_grad_view(slot);
      }
      slots[i] = std::move(slot);
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
  check_same_model(*r.group, r.params);

  std::vector<Tensor> state = r.params;
  for (const auto& [_, b] : module_->named_buffers()) state.push_back(b);
  broadcast_coalesced(*r.group, state, 0);

  r.bucket_of.assign(r.params.size(), 0);
  for (BucketInfo& info : assign_buckets(r.params, r.names, options)) {
    for (std::size_t i : info.param_index) r.bucket_of[i] = r.buckets.size();
    r.buckets.push_back({std::move(info), Tensor(), nullptr, 0});
  }
  r.allocate_buffers(1);
  r.ready.assign(r.params.size(), 0);
  r.used.assign(r.params.size(), 0);

  for (std::size_t i = 0; i < r.params.size(); ++i)
    r.params[i].register_post_accumulate_hook(
        [weak = std::weak_ptr<Reducer>(reducer_), i](const Tensor&) {
          if (auto self = weak.lock()) self->on_gradient(i);
        });
}

DistributedDataParallel::~DistributedDataParallel() {
  reducer_->drain();
}

ProcessGroup& DistributedDataParallel::group() const {
  return *reducer_->group;
}

void DistributedDataParallel::register_comm_hook(CommHook hook, int64_t pad_to) {
  Reducer& r = *reducer_;
  RG_CHECK(hook != nullptr, "DistributedDataParallel::register_comm_hook: the hook is empty");
  RG_CHECK(pad_to >= 1, "DistributedDataParallel::register_comm_hook: pad_to must be >= 1, got ",
           pad_to);
  RG_CHECK(!r.expect_sync,
           "DistributedDataParallel::register_comm_hook: between iterations only "
           "(a synchronised forward is waiting for its backward)");
  r.drain();
  r.hook = std::move(hook);
  r.custom_hook = true;
  r.allocate_buffers(pad_to);
}

bool DistributedDataParallel::has_comm_hook() const {
  return reducer_->custom_hook;
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
  if (sync && is_training() && r.options.broadcast_buffers == BroadcastBuffers::forward)
    broadcast_buffers(*module_, *r.group);
  trace::instant("ddp", [&] {
    return trace::Label{sync ? "forward: synchronised iteration" : "forward: no_sync",
                        trace::args("buckets", r.buckets.size())};
  });
  Tensor out = module_->forward(x);
  // The parameters backward cannot reach are ready now: their buckets need not wait.
  if (sync && r.options.unused_parameters == UnusedParameters::allow)
    for (std::size_t i : unreachable_parameters(out, r.params)) r.mark_ready(i, Arrival::unused);
  return out;
}

std::string DistributedDataParallel::extra_repr() const {
  return "world " + std::to_string(reducer_->group->size()) + ", " +
         std::to_string(reducer_->buckets.size()) + " bucket(s)";
}

std::vector<BucketInfo> DistributedDataParallel::buckets() const {
  std::vector<BucketInfo> out;
  for (const auto& b : reducer_->buckets) out.push_back(b.info);
  return out;
}

const Tensor& DistributedDataParallel::bucket_buffer(std::size_t b) const {
  RG_CHECK(b < reducer_->buckets.size(), "DistributedDataParallel: no bucket ", b, " (",
           reducer_->buckets.size(), " buckets)");
  return reducer_->buckets[b].buffer;
}

DistributedDataParallel::IterationStats DistributedDataParallel::last_iteration() const {
  return reducer_->last;
}

const DDPOptions& DistributedDataParallel::options() const {
  return reducer_->options;
}

const std::vector<Tensor>& DistributedDataParallel::trained_parameters() const {
  return reducer_->params;
}

const std::vector<std::string>& DistributedDataParallel::trained_parameter_names() const {
  return reducer_->names;
}

}  // namespace rg::parallel
