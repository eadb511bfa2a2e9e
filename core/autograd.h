#pragma once
// Autograd: a dynamic tape. Each differentiable op creates a Node that keeps only what its
// backward needs and points (Edges) at the nodes that produced its inputs. backward() runs the
// nodes reachable from the root in dependency order and accumulates into the leaves' .grad.
//
// How an op records itself (see ops/relu/relu.cpp for a complete example):
//
//   Tensor out = ...forward...;
//   if (needs_grad({x})) {
//     auto node = std::make_shared<ReluBackward>(saved(out));   // saved() detaches: no cycles
//     record(node, {x}, {&out});
//   }
//
// or, for a backward that is a line or two of math, with record_backward() and a closure (below).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/tensor.h"

namespace rg {

struct Edge {
  std::shared_ptr<Node> node;  // null: that input needs no gradient
  int input_nr = 0;            // which output of `node` the gradient flows into
};

// What the engine needs to know about each output of a node, to check incoming gradients and
// to create zeros for outputs that got none.
struct OutputMeta {
  Shape shape;
  DType dtype = DType::f32;
  Device device;
};

uint64_t next_sequence_nr();  // creation order of nodes, for the engine's schedule

class Node {
 public:
  virtual ~Node() = default;
  virtual std::string name() const = 0;
  // Gradients w.r.t. the inputs (one per next edge, undefined where none), given one defined
  // gradient per output. Runs with grad mode off.
  virtual std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs) = 0;
  // Frees saved tensors after a backward without retain_graph.
  virtual void release_saved() {}

  std::vector<Edge> next_edges;
  std::vector<OutputMeta> outputs;
  bool released = false;  // set after backward without retain_graph
  uint64_t sequence_nr = next_sequence_nr();
};

// Accumulates into a leaf's .grad and runs its post-accumulate hooks.
class AccumulateGrad : public Node {
 public:
  // Runs as soon as it is ready (highest priority), so hooks fire early.
  explicit AccumulateGrad(std::weak_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {
    sequence_nr = UINT64_MAX;
  }
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs) override;

 private:
  std::weak_ptr<TensorImpl> leaf_;  // weak: the leaf owns its accumulator, not the reverse
};

// ---- grad mode -----------------------------------------------------------------------------
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Disables graph recording in its scope (torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// ---- helpers for ops -----------------------------------------------------------------------
// True when grad mode is on and any defined input requires grad.
bool needs_grad(std::initializer_list<Tensor> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);
// A tensor safe to keep in a node: same data, no history (keeping the output itself would make
// a cycle output -> node -> output).
Tensor saved(const Tensor& t);
// Connects node to the inputs (next edges) and makes it the grad_fn of the outputs.
void record(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs,
            const std::vector<Tensor*>& outputs);
// Reduces a broadcast gradient back to `shape` by summing over broadcast dims.
// (Defined in core because the engine-level view ops need it too.)
Tensor sum_to_shape(const Tensor& grad, const Shape& shape);
// acc += g elementwise (same shape); the engine's gradient accumulation.
void add_inplace(const Tensor& acc, const Tensor& g);

// ---- backward rules as closures ------------------------------------------------------------
// Most backward passes are a line or two of math; record_backward() takes that math as a
// closure, so the rule sits beside the forward as in tinygrad's gradient table. The closure gets
// the output's gradient (a `const Tensor&`), or every output's (`const std::vector<Tensor>&`) for
// an op with several outputs, and returns the input's gradient (a Tensor), or one per input
// (Grads, in the inputs' order; undefined where an input needs none). It captures what it saves,
// always through saved(): a captured output would make the cycle output -> node -> closure ->
// output. After a backward without retain_graph the node destroys the closure, and so releases
// everything it captured, as release_saved() does for a Node class.
//
//   Tensor y = pointwise("relu", ReluFn{}, x);
//   if (needs_grad({x}))
//     record_backward("ReluBackward", {x}, y, [y = saved(y)](const Tensor& gy) {
//       return pointwise("relu_backward", ReluGradFn{}, gy, y);
//     });
//
// A Node class earns its place where the backward has state or structure of its own (BatchNorm's
// statistics, the convolutions' kernel choices, DataParallel's devices).
using Grads = std::vector<Tensor>;

template <class Rule>
class RuleBackward final : public Node {
 public:
  RuleBackward(const char* name, Rule rule) : name_(name), rule_(std::move(rule)) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs) override {
    if constexpr (std::is_invocable_v<Rule&, const Tensor&>) {
      using Result = std::invoke_result_t<Rule&, const Tensor&>;
      if constexpr (std::is_same_v<Result, Tensor>)
        return {(*rule_)(grad_outputs[0])};
      else
        return (*rule_)(grad_outputs[0]);
    } else {
      return (*rule_)(grad_outputs);
    }
  }
  void release_saved() override { rule_.reset(); }

 private:
  const char* name_;  // a string literal
  std::optional<Rule> rule_;
};

// Records `rule` as the backward of `output` (or `outputs`) with respect to `inputs`.
template <class Rule>
void record_backward(const char* name, const std::vector<Tensor>& inputs, Tensor& output,
                     Rule rule) {
  record(std::make_shared<RuleBackward<Rule>>(name, std::move(rule)), inputs, {&output});
}
template <class Rule>
void record_backward(const char* name, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor*>& outputs, Rule rule) {
  record(std::make_shared<RuleBackward<Rule>>(name, std::move(rule)), inputs, outputs);
}

// ---- the engine ----------------------------------------------------------------------------
void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                  bool retain_graph);
// Runs fn when the backward pass running in this thread has finished — every node applied and
// every leaf accumulated — just before backward() returns (PyTorch's queue_callback). Only
// valid during a backward, i.e. from a node or a post-accumulate hook: DDP queues one from its
// first hook of an iteration, so it learns that backward ended without the training loop's
// help. Callbacks run in the order queued, with grad mode off; an exception propagates out of
// backward(). A backward that fails runs none of its callbacks.
void queue_backward_callback(std::function<void()> fn);

}  // namespace rg
