#include "parallel/data_parallel.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/allocator.h"
#include "core/autocast.h"
#include "core/autograd.h"
#include "core/trace.h"
#include "parallel/sync_batch_norm.h"
#include "parallel/thread_group.h"

namespace rg::parallel {

namespace {

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

// Throws one error naming every replica that failed and its device. All of them: when one
// replica fails inside SyncBatchNorm, the others time out waiting for it, and the first
// replica's timeout alone would hide the cause.
void rethrow_replica_errors(const std::vector<std::exception_ptr>& errors,
                            const std::vector<Device>& devices, const char* phase) {
  std::string message;
  for (std::size_t r = 0; r < errors.size(); ++r)
    if (errors[r])
      message += std::string(message.empty() ? "" : "; ") + "replica " + std::to_string(r) +
                 " on " + devices[r].str() + " failed in " + phase + ": " + message_of(errors[r]);
  if (!message.empty()) fail("DataParallel: ", message);
}

std::vector<Tensor> master_values(const std::vector<Tensor*>& members) {
  std::vector<Tensor> values;
  for (const Tensor* p : members) values.push_back(*p);
  return values;
}

void check_batch(const Tensor& x, const Device& first) {
  RG_CHECK(x.defined() && x.dim() >= 1 && x.size(0) >= 1,
           "DataParallel: expected a batch (B, ...) with B >= 1, got ",
           x.defined() ? x.describe() : std::string("an undefined tensor"));
  RG_CHECK(x.device() == first, "DataParallel: the input must be on the first device, ", first,
           ", got ", x.describe());
}

// Sets this thread's grad mode for its scope (NoGradGuard can only turn it off).
class GradModeScope {
 public:
  explicit GradModeScope(bool enabled) : previous_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~GradModeScope() { GradMode::set_enabled(previous_); }

 private:
  bool previous_;
};

// The replicas' computation as one node of the outer graph. Forward ran each replica on its
// thread from leaves of its own (detached copies of its input piece and parameters); backward
// runs each replica's graph on the same thread, side by side, and hands the gradients of those
// leaves on to scatter's and broadcast's backward. Inputs: the n input pieces, then the
// parameters replica by replica; outputs: the n replica outputs.
class ParallelApplyBackward : public Node {
 public:
  ParallelApplyBackward(std::vector<Tensor> roots, std::vector<Tensor> input_leaves,
                        std::vector<std::vector<Tensor>> parameter_leaves,
                        std::vector<Device> devices, std::shared_ptr<DeviceThreads> threads,
                        std::shared_ptr<DataParallelTimes> times)
      : roots_(std::move(roots)),
        input_leaves_(std::move(input_leaves)),
        parameter_leaves_(std::move(parameter_leaves)),
        devices_(std::move(devices)),
        threads_(std::move(threads)),
        times_(std::move(times)) {}
  std::string name() const override { return "ParallelApplyBackward"; }

  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const trace::Span span("dp", "backward of the replicas", &times_->backward);
    const int n = static_cast<int>(roots_.size());
    const auto errors = threads_->run(n, [&](int r) {
      const trace::Span replica("dp", [&] { return "replica " + std::to_string(r) + " backward"; });
      const Tensor& root = roots_[static_cast<std::size_t>(r)];
      if (root.requires_grad()) run_backward({root}, {g[static_cast<std::size_t>(r)]}, false);
    });
    rethrow_replica_errors(errors, devices_, "backward");
    times_->count_backward(threads_->busy_seconds());
    std::vector<Tensor> grads;
    for (const Tensor& leaf : input_leaves_)
      grads.push_back(leaf.defined() ? leaf.grad() : Tensor());
    for (const auto& replica : parameter_leaves_)
      for (const Tensor& leaf : replica) grads.push_back(leaf.grad());
    return grads;
  }
  void release_saved() override {
    roots_.clear();
    input_leaves_.clear();
    parameter_leaves_.clear();
  }

 private:
  std::vector<Tensor> roots_, input_leaves_;
  std::vector<std::vector<Tensor>> parameter_leaves_;
  std::vector<Device> devices_;
  std::shared_ptr<DeviceThreads> threads_;
  std::shared_ptr<DataParallelTimes> times_;
};

}  // namespace

DataParallel::DataParallel(std::shared_ptr<nn::Module> module, ReplicaFactory make_replica,
                           std::vector<Device> devices, DataParallelOptions options)
    : module_(std::move(module)),
      devices_(std::move(devices)),
      options_(options),
      times_(std::make_shared<DataParallelTimes>()) {
  RG_CHECK(module_ != nullptr, "DataParallel: the module is null");
  RG_CHECK(make_replica != nullptr, "DataParallel: no replica factory");
  RG_CHECK(!devices_.empty(), "DataParallel: no devices");
  // A device may be listed more than once: its replicas share it, each on its own thread (and
  // on a GPU its own stream), as if each had a device of its own.
  for (const Device& device : devices_) check_device_available(device);
  register_wrapped_module(module_);
  const int n = static_cast<int>(devices_.size());

  for (auto& [name, member] : module_->parameter_members()) {
    RG_CHECK(member->device() == devices_[0], "DataParallel: parameter '", name, "' is on ",
             member->device(), " but the model must be on the first device, ", devices_[0],
             " (move it with to() before wrapping it)");
    parameter_names_.push_back(name);
    master_parameters_.push_back(member);
  }
  for (auto& [name, member] : module_->buffer_members()) master_buffers_.push_back(member);

  const int threads = options_.threads_per_device > 0 ? options_.threads_per_device
                                                      : std::max(1, num_threads() / n);
  threads_ = std::make_shared<DeviceThreads>(devices_, threads);
  times_->device_forward.assign(static_cast<std::size_t>(n), 0.0);
  times_->device_backward.assign(static_cast<std::size_t>(n), 0.0);
  groups_.resize(static_cast<std::size_t>(n) + 1);
  if (options_.batch_norm == BatchNormSync::across_devices)
    groups_[static_cast<std::size_t>(n)] = ThreadGroup::create(n);

  const auto master_modules = module_->named_modules();
  for (int r = 0; r < n; ++r) {
    Replica replica;
    replica.module = make_replica();
    RG_CHECK(replica.module != nullptr, "DataParallel: the replica factory returned null");
    if (options_.batch_norm == BatchNormSync::across_devices)
      replica.module = convert_sync_batchnorm(
          replica.module, groups_[static_cast<std::size_t>(n)][static_cast<std::size_t>(r)]);
    const auto params = replica.module->parameter_members();
    const auto buffers = replica.module->buffer_members();
    const auto modules = replica.module->named_modules();
    RG_CHECK(
        params.size() == master_parameters_.size() && buffers.size() == master_buffers_.size() &&
            modules.size() == master_modules.size(),
        "DataParallel: the replica factory builds a model with ", params.size(), " parameters, ",
        buffers.size(), " buffers and ", modules.size(), " modules, but the model has ",
        master_parameters_.size(), ", ", master_buffers_.size(), " and ", master_modules.size());
    for (std::size_t i = 0; i < params.size(); ++i)
      RG_CHECK(params[i].first == parameter_names_[i] &&
                   params[i].second->shape() == master_parameters_[i]->shape(),
               "DataParallel: the replica factory builds a different model: its parameter ", i,
               " is '", params[i].first, "' ", shape_str(params[i].second->shape()),
               " but the model's is '", parameter_names_[i], "' ",
               shape_str(master_parameters_[i]->shape()));
    for (auto& [name, member] : params) {
      replica.parameters.push_back(member);
      *member = Tensor();  // its own values never serve: every forward binds the master's
    }
    for (auto& [name, member] : buffers) {
      replica.buffers.push_back(member);
      *member = Tensor();
    }
    for (std::size_t m = 0; m < modules.size(); ++m) {
      replica.modes.emplace_back(master_modules[m].second, modules[m].second);
      if (auto* sync = dynamic_cast<SyncBatchNorm*>(modules[m].second))
        replica.sync_batch_norms.push_back(sync);
    }
    replicas_.push_back(std::move(replica));
  }
}

DataParallel::~DataParallel() = default;

// SyncBatchNorm's collectives must count exactly the replicas that run this step.
void DataParallel::bind_groups(int used) {
  auto& groups = groups_[static_cast<std::size_t>(used)];
  if (groups.empty()) groups = ThreadGroup::create(used);
  for (int r = 0; r < used; ++r)
    for (SyncBatchNorm* sync : replicas_[static_cast<std::size_t>(r)].sync_batch_norms)
      sync->set_group(groups[static_cast<std::size_t>(r)]);
}

Tensor DataParallel::forward(const Tensor& x) {
  check_batch(x, devices_[0]);
  const int used = static_cast<int>(std::min<int64_t>(x.size(0), std::ssize(devices_)));
  last_used_ = used;
  const std::vector<Device> devices(devices_.begin(), devices_.begin() + used);

  // Each piece records its phase in the timeline and its seconds in times_.
  const std::vector<Tensor> inputs = scatter(x, split_sizes(x.size(0), used), devices, times_);
  const auto parameters = broadcast(master_values(master_parameters_), devices, times_);
  const auto buffers = replicate_buffers(devices);
  const std::vector<Tensor> outputs = run_replicas(inputs, parameters, buffers);
  return gather(outputs, devices_[0], times_);
}

// Replica 0 runs on the master's own buffers, so its running statistics are the ones kept;
// every other replica updates a copy — also one that shares the master's device, which would
// otherwise update the master's buffers at the same time as replica 0.
std::vector<std::vector<Tensor>> DataParallel::replicate_buffers(
    const std::vector<Device>& devices) const {
  const trace::Span span("dp", "replicate the buffers", &times_->replicate);
  NoGradGuard no_grad;
  std::vector<std::vector<Tensor>> buffers(devices.size());
  for (std::size_t r = 0; r < devices.size(); ++r)
    for (const Tensor* b : master_buffers_)
      buffers[r].push_back(r == 0                      ? *b
                           : b->device() == devices[r] ? b->clone()
                                                       : b->to(devices[r]));
  return buffers;
}

std::vector<Tensor> DataParallel::run_replicas(const std::vector<Tensor>& inputs,
                                               const std::vector<std::vector<Tensor>>& parameters,
                                               const std::vector<std::vector<Tensor>>& buffers) {
  const trace::Span span("dp", "forward of the replicas", &times_->forward);
  const int used = static_cast<int>(inputs.size());
  const bool grad = GradMode::is_enabled();
  const std::optional<DType> autocast = autocast_dtype();
  if (options_.batch_norm == BatchNormSync::across_devices) bind_groups(used);
  // Each submodule of a replica in its master's mode (set parents first: set_mode recurses).
  for (int r = 0; r < used; ++r)
    for (auto& [master, replica] : replicas_[static_cast<std::size_t>(r)].modes)
      replica->set_mode(master->is_training() ? nn::Mode::train : nn::Mode::eval);

  // The replicas compute from leaves of their own, so that their backward can run on their own
  // threads (ParallelApplyBackward); the outer graph links those leaves to scatter and broadcast.
  std::vector<Tensor> outputs(static_cast<std::size_t>(used)), input_leaves(outputs.size());
  std::vector<std::vector<Tensor>> parameter_leaves(outputs.size());
  const auto errors = threads_->run(used, [&](int r) {
    const auto ru = static_cast<std::size_t>(r);
    const trace::Span span("dp", [&] { return "replica " + std::to_string(r) + " forward"; });
    GradModeScope grad_mode(grad);
    AutocastGuard autocast_scope(autocast);
    Replica& replica = replicas_[ru];
    for (std::size_t i = 0; i < replica.parameters.size(); ++i) {
      Tensor leaf = parameters[ru][i].detach();
      if (grad && master_parameters_[i]->requires_grad()) leaf.set_requires_grad(true);
      *replica.parameters[i] = leaf;
      parameter_leaves[ru].push_back(leaf);
    }
    for (std::size_t i = 0; i < replica.buffers.size(); ++i) *replica.buffers[i] = buffers[ru][i];
    Tensor input = inputs[ru].detach();
    if (grad && inputs[ru].requires_grad()) {
      input.set_requires_grad(true);
      input_leaves[ru] = input;
    }
    outputs[ru] = replica.module->forward(input);
    RG_CHECK(outputs[ru].defined() && outputs[ru].dim() >= 1 &&
                 outputs[ru].size(0) == inputs[ru].size(0),
             "the output must keep the batch dimension (", inputs[ru].size(0), " samples in), got ",
             outputs[ru].defined() ? outputs[ru].describe() : std::string("an undefined tensor"));
  });
  times_->count_forward(threads_->busy_seconds());
  // Between steps the replicas hold nothing: what backward needs, the graph keeps.
  for (Replica& replica : replicas_) {
    for (Tensor* p : replica.parameters) *p = Tensor();
    for (Tensor* b : replica.buffers) *b = Tensor();
  }
  rethrow_replica_errors(errors, devices_, "forward");

  std::vector<Tensor> outer_inputs = inputs;
  for (const auto& replica : parameters)
    outer_inputs.insert(outer_inputs.end(), replica.begin(), replica.end());
  if (!needs_grad(outer_inputs)) return outputs;
  std::vector<Tensor> handles;
  std::vector<Tensor*> handle_ptrs;
  for (const Tensor& y : outputs) handles.push_back(y.detach());
  for (Tensor& h : handles) handle_ptrs.push_back(&h);
  record(std::make_shared<ParallelApplyBackward>(
             outputs, input_leaves, parameter_leaves,
             std::vector<Device>(devices_.begin(), devices_.begin() + used), threads_, times_),
         outer_inputs, handle_ptrs);
  return handles;
}

void DataParallel::reset_times() {
  const std::size_t n = devices_.size();
  *times_ = DataParallelTimes{};
  times_->device_forward.assign(n, 0.0);
  times_->device_backward.assign(n, 0.0);
}

std::string DataParallel::report() const {
  const DataParallelTimes& t = *times_;
  const double fw = std::max<int64_t>(1, t.forwards), bw = std::max<int64_t>(1, t.backwards);
  auto ms = [](double seconds, double per) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f ms", 1000 * seconds / per);
    return std::string(text);
  };
  std::ostringstream out;
  out << "DataParallel over " << devices_.size() << " devices x " << threads_->threads_per_device()
      << " compute thread(s); mean per step (" << t.forwards << " forwards, " << t.backwards
      << " backwards):\n  scatter " << ms(t.scatter, fw) << "  replicate " << ms(t.replicate, fw)
      << "  forward " << ms(t.forward, fw) << "  gather " << ms(t.gather, fw) << "  backward "
      << ms(t.backward, bw) << "  reduce " << ms(t.reduce, bw) << "\n";
  for (std::size_t r = 0; r < devices_.size(); ++r) {
    // Replicas that share a device share its memory: its figures go with the first of them.
    std::size_t first = 0;
    while (devices_[first] != devices_[r]) ++first;
    char mem[128];
    if (first == r) {
      const MemoryStats m = memory_stats(devices_[r]);
      std::snprintf(mem, sizeof mem, "memory %.1f MiB now, %.1f MiB peak",
                    static_cast<double>(m.current_bytes) / (1 << 20),
                    static_cast<double>(m.peak_bytes) / (1 << 20));
    } else {
      std::snprintf(mem, sizeof mem, "memory: shared with replica %zu", first);
    }
    out << "  replica " << r << " on " << devices_[r] << ": computing "
        << ms(t.device_forward[r], fw) << " in forward, " << ms(t.device_backward[r], bw)
        << " in backward; " << mem << "\n";
  }
  return out.str();
}

}  // namespace rg::parallel
