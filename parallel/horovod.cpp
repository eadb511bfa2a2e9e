#include "parallel/horovod.h"

#include <nlohmann/json.hpp>

#include "core/autograd.h"
#include "parallel/coalesced.h"

namespace rg::parallel {

// The length first, so that the other ranks can size their buffer for the bytes.
std::string broadcast_object(const std::string& text, int root, ProcessGroup& group) {
  Tensor length = from_vector<int64_t>({static_cast<int64_t>(text.size())}, {1}, {DType::i64});
  group.broadcast(length, root)->wait();
  const int64_t n = length.to_vector<int64_t>()[0];
  Tensor bytes = empty({n}, {DType::u8});
  if (group.rank() == root) std::copy(text.begin(), text.end(), bytes.data<uint8_t>());
  if (n > 0) group.broadcast(bytes, root)->wait();
  const auto* p = bytes.data<uint8_t>();
  return std::string(p, p + n);
}

void broadcast_parameters(const std::map<std::string, Tensor>& tensors, int root,
                          ProcessGroup& group) {
  std::vector<Tensor> list;  // map order: sorted by name, the same on every rank
  for (const auto& [_, t] : tensors) list.push_back(t);
  broadcast_coalesced(group, list, root);
}

void broadcast_parameters(const nn::Module& module, int root, ProcessGroup& group) {
  broadcast_parameters(module.state_dict(), root, group);
}

void broadcast_optimizer_state(Optimizer& optimizer, int root, ProcessGroup& group) {
  NoGradGuard no_grad;
  // Root describes its state (metadata, and each tensor's name, shape and dtype) in JSON;
  // the others allocate to match, then the tensors travel coalesced.
  StateDict mine;
  std::string header;
  if (group.rank() == root) {
    mine = optimizer.state_dict();
    nlohmann::json j;
    j["metadata"] = mine.metadata;
    j["tensors"] = nlohmann::json::array();
    for (const auto& [name, t] : mine.tensors)
      j["tensors"].push_back(
          {{"name", name}, {"shape", t.shape()}, {"dtype", dtype_name(t.dtype())}});
    header = j.dump();
  }
  header = broadcast_object(header, root, group);
  if (group.rank() == root) {
    std::vector<Tensor> list;
    for (const auto& [_, t] : mine.tensors) list.push_back(t.contiguous());
    broadcast_coalesced(group, list, root);
    return;
  }
  const nlohmann::json j = nlohmann::json::parse(header);
  StateDict theirs;
  theirs.metadata = j.at("metadata").get<std::map<std::string, std::string>>();
  std::vector<Tensor> list;
  for (const auto& t : j.at("tensors")) {
    // By name, not the enum's number: a peer built with another DType order fails by name.
    Tensor x =
        empty(t.at("shape").get<Shape>(), {dtype_from_name(t.at("dtype").get<std::string>())});
    theirs.tensors[t.at("name").get<std::string>()] = x;
    list.push_back(x);
  }
  broadcast_coalesced(group, list, root);
  optimizer.load_state_dict(theirs);
}

Tensor allreduce_metric(const Tensor& value, const std::string& name, ReduceOp op,
                        ProcessGroup& group) {
  RG_CHECK(value.defined(), "allreduce_metric('", name, "'): the value is undefined");
  NoGradGuard no_grad;
  Tensor t = value.detach().to(DType::f64).contiguous().clone();
  try {
    group.allreduce(t, op)->wait();
  } catch (const Error& e) {
    fail("allreduce_metric('", name, "'): ", e.what());
  }
  return t.to(value.dtype());
}

double allreduce_metric(double value, const std::string& name, ReduceOp op, ProcessGroup& group) {
  return allreduce_metric(scalar_tensor(value, {DType::f64}), name, op, group).item();
}

// ---- DistributedOptimizer ------------------------------------------------------------------

struct DistributedOptimizer::State {
  std::shared_ptr<ProcessGroup> group;
  DistributedOptimizerOptions options;
  std::vector<Tensor> params;
  std::vector<int> passes;  // backward passes accumulated since the last step
  std::vector<std::shared_ptr<Work>> works;

  std::string describe(std::size_t i) const {
    return "parameter " + std::to_string(i) + " " + params[i].describe();
  }

  void launch(std::size_t i) {
    Tensor g = params[i].grad();
    if (!g.defined() || !g.is_contiguous()) {
      // No gradient (zeros, so every rank joins) or a strided one: reduce an owned copy.
      Tensor owned = g.defined() ? g.contiguous().clone() : zeros_like(params[i]);
      params[i].set_grad(owned);
      g = owned;
    }
    works[i] = group->allreduce(g, options.op);
  }

  void on_gradient(std::size_t i) {
    ++passes[i];
    RG_CHECK(passes[i] <= options.backward_passes_per_step, "DistributedOptimizer: ", describe(i),
             " received gradients from ", passes[i],
             " backward passes before step(), more than backward_passes_per_step = ",
             options.backward_passes_per_step,
             ": call step() after that many passes, or raise backward_passes_per_step");
    if (passes[i] == options.backward_passes_per_step) launch(i);
  }
};

DistributedOptimizer::DistributedOptimizer(Optimizer& optimizer,
                                           DistributedOptimizerOptions options,
                                           std::shared_ptr<ProcessGroup> group)
    : optimizer_(optimizer), state_(std::make_shared<State>()) {
  RG_CHECK(options.backward_passes_per_step >= 1,
           "DistributedOptimizer: backward_passes_per_step must be >= 1, got ",
           options.backward_passes_per_step);
  State& s = *state_;
  s.group = group ? std::move(group) : world_ptr();
  s.options = options;
  s.params = optimizer.all_params();
  s.passes.assign(s.params.size(), 0);
  s.works.resize(s.params.size());
  for (std::size_t i = 0; i < s.params.size(); ++i)
    s.params[i].register_post_accumulate_hook(
        [weak = std::weak_ptr<State>(state_), i](const Tensor&) {
          if (auto self = weak.lock()) self->on_gradient(i);
        });
}

DistributedOptimizer::~DistributedOptimizer() {
  for (auto& w : state_->works)
    if (w) try {
        w->wait();
      } catch (...) {
      }
}

void DistributedOptimizer::synchronize() {
  State& s = *state_;
  // Parameters still short of backward_passes_per_step (or with no gradient at all) are
  // launched now, in parameter order — the same on every rank.
  for (std::size_t i = 0; i < s.params.size(); ++i)
    if (!s.works[i]) s.launch(i);
  for (std::size_t i = 0; i < s.params.size(); ++i) {
    s.works[i]->wait();
    s.works[i].reset();
    s.passes[i] = 0;
  }
}

void DistributedOptimizer::step() {
  synchronize();
  optimizer_.step();
}

}  // namespace rg::parallel
