// The backward engine and the helpers ops use to record themselves.
#include "core/autograd.h"

#include <atomic>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/dispatch.h"
#include "core/strided_loop.h"
#include "core/thread_pool.h"
#include "core/trace.h"

namespace rg {

namespace {
thread_local bool grad_mode_enabled = true;
// The callbacks of the backward pass running in this thread (null outside backward).
thread_local std::vector<std::function<void()>>* backward_callbacks = nullptr;

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta& meta = *leaf.impl()->autograd;  // exists: requires_grad set it
  std::shared_ptr<Node> node = meta.grad_accumulator.lock();
  if (!node) {
    node = std::make_shared<AccumulateGrad>(leaf.impl_ptr());
    node->outputs.push_back({leaf.shape(), leaf.dtype(), leaf.device()});
    meta.grad_accumulator = node;
  }
  return node;
}

// True when t is the only handle to its memory: no other tensor, view or saved copy can see
// an in-place update of it. Gradients fresh from a backward kernel usually are.
bool sole_owner(const Tensor& t) {
  return t.impl_ptr().use_count() == 1 && t.storage().use_count() == 1;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  if (t.grad_fn()) return {t.grad_fn(), t.output_nr()};
  return {grad_accumulator(t), 0};
}

}  // namespace

uint64_t next_sequence_nr() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1);
}

bool GradMode::is_enabled() {
  return grad_mode_enabled;
}
void GradMode::set_enabled(bool enabled) {
  grad_mode_enabled = enabled;
}

bool needs_grad(std::initializer_list<Tensor> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Tensor saved(const Tensor& t) {
  return t.defined() ? t.detach() : Tensor();
}

void record(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs,
            const std::vector<Tensor*>& outputs) {
  node->next_edges.clear();
  for (const Tensor& in : inputs) node->next_edges.push_back(gradient_edge(in));
  node->outputs.clear();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = *outputs[i];
    node->outputs.push_back({out.shape(), out.dtype(), out.device()});
    TensorImpl* impl = out.impl();
    if (!impl->autograd) impl->autograd = std::make_unique<AutogradMeta>();
    impl->autograd->grad_fn = node;
    impl->autograd->output_nr = static_cast<int>(i);
  }
  if (trace::on()) trace::detail::attribute(*node, inputs);
}

std::vector<Tensor> AccumulateGrad::apply(const std::vector<Tensor>& grad_outputs) {
  std::shared_ptr<TensorImpl> impl = leaf_.lock();
  if (!impl) return {};  // the leaf is gone: nobody can read its gradient
  Tensor leaf(impl);
  const Tensor& g = grad_outputs[0];
  Tensor current = leaf.grad();
  if (!current.defined()) {
    // An owned dense buffer in the leaf's own layout (PyTorch's gradient layout contract:
    // contiguous, or channels-last for a channels-last leaf): the optimizer, DDP and clipping
    // will update .grad in place. g itself when nothing else holds it (the engine passes it
    // here and drops it after) and it has that layout; otherwise a copy, since g may alias a
    // buffer another node still reads.
    const MemoryFormat format = leaf.suggest_memory_format();
    if (sole_owner(g) && g.is_contiguous(format)) {
      leaf.set_grad(g);
    } else {
      Tensor owned = empty(g.shape(), {g.dtype(), g.device()}, format);
      copy_strided(owned, g);
      leaf.set_grad(owned);
    }
  } else {
    add_inplace(current, g);
  }
  for (const PostAccumulateHook& hook : impl->autograd->post_accumulate_hooks) hook(leaf);
  return {};
}

// The kernels of add_inplace and sum_to_shape, per backend: the CPU loops below, the CUDA
// launches in core/cuda/autograd_cuda.cu.
void accumulate_into(OnCuda, const Tensor& acc, const Tensor& g);
void sum_into(OnCuda, const Tensor& grad, const std::vector<bool>& reduced, const Tensor& out);

void accumulate_into(OnCpu, const Tensor& acc, const Tensor& g) {
  dispatch_floating(acc.dtype(), "gradient accumulation", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    T* a = static_cast<T*>(acc.data_ptr());
    const T* b = static_cast<const T*>(g.data_ptr());
    if (same_dense_layout(acc, g)) {  // both NCHW or both channels-last: a flat loop
      parallel_for(acc.numel(), 1 << 15, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) a[i] = T(static_cast<C>(a[i]) + static_cast<C>(b[i]));
      });
    } else {
      strided_loop<2>(acc.shape(), {&acc.strides(), &g.strides()}, 0, acc.numel(),
                      [&](const std::array<int64_t, 2>& o) {
                        a[o[0]] = T(static_cast<C>(a[o[0]]) + static_cast<C>(b[o[1]]));
                      });
    }
  });
}

// out = Σ grad over the dims marked in `reduced`; out is contiguous with the kept dims.
void sum_into(OnCpu, const Tensor& grad, const std::vector<bool>& reduced, const Tensor& out) {
  // Strides of the result as seen from the gradient's index space: 0 on summed dims.
  Shape out_strides_full(grad.dim(), 0);
  int64_t stride = 1;
  for (int64_t d = grad.dim() - 1; d >= 0; --d) {
    if (reduced[d]) continue;
    out_strides_full[d] = stride;
    stride *= grad.shape()[d];
  }
  dispatch_floating(grad.dtype(), "sum_to_shape", [&](auto tag) {
    using T = decltype(tag);
    // Accumulate in double: this is a reduction over possibly many broadcast elements.
    std::vector<double> acc(static_cast<std::size_t>(out.numel()), 0.0);
    const T* g = static_cast<const T*>(grad.data_ptr());
    strided_loop<2>(grad.shape(), {&out_strides_full, &grad.strides()}, 0, grad.numel(),
                    [&](const std::array<int64_t, 2>& o) {
                      acc[o[0]] += static_cast<double>(static_cast<compute_t<T>>(g[o[1]]));
                    });
    T* dst = static_cast<T*>(out.data_ptr());
    for (std::size_t i = 0; i < acc.size(); ++i) dst[i] = convert<T>(acc[i]);
  });
}

void add_inplace(const Tensor& acc, const Tensor& g) {
  RG_CHECK(acc.shape() == g.shape() && acc.dtype() == g.dtype() && acc.device() == g.device(),
           "gradient accumulation: ", acc.describe(), " += ", g.describe(), " do not match");
  dispatch_device<Kernels::cpu_and_cuda>("gradient accumulation", acc.device(),
                                         [&](auto on) { accumulate_into(on, acc, g); });
}

Tensor sum_to_shape(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  RG_CHECK(lead >= 0, "sum_to_shape: gradient ", grad.describe(), " has fewer dims than ",
           shape_str(shape));
  std::vector<bool> reduced(static_cast<std::size_t>(grad.dim()), true);  // the lead dims
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    const int64_t gd = d + lead;
    RG_CHECK(shape[d] == grad.shape()[gd] || shape[d] == 1, "sum_to_shape: gradient ",
             grad.describe(), " cannot be summed to ", shape_str(shape));
    reduced[gd] = shape[d] != grad.shape()[gd];
  }
  Tensor out = empty(shape, {grad.dtype(), grad.device()});
  dispatch_device<Kernels::cpu_and_cuda>("sum_to_shape", grad.device(),
                                         [&](auto on) { sum_into(on, grad, reduced, out); });
  return out;
}

void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
                  bool retain_graph) {
  RG_CHECK(roots.size() == grad_roots.size(), "backward: ", roots.size(), " outputs but ",
           grad_roots.size(), " gradients");
  NoGradGuard no_grad;
  std::vector<std::function<void()>> callbacks;
  struct CallbackScope {  // restores the enclosing list, also when backward throws
    std::vector<std::function<void()>>* previous = backward_callbacks;
    explicit CallbackScope(std::vector<std::function<void()>>* own) { backward_callbacks = own; }
    ~CallbackScope() { backward_callbacks = previous; }
  } callback_scope(&callbacks);

  std::vector<Edge> root_edges;
  std::vector<Tensor> root_grads;
  for (std::size_t i = 0; i < roots.size(); ++i) {
    const Tensor& root = roots[i];
    RG_CHECK(root.defined() && root.requires_grad(),
             "backward: the tensor does not require grad and has no grad_fn (did you call it "
             "under NoGradGuard, or forget set_requires_grad?): ",
             root.describe());
    Tensor g = grad_roots[i];
    if (!g.defined()) {
      RG_CHECK(root.numel() == 1,
               "backward: grad can be implicitly created only for outputs with "
               "one element; got ",
               root.describe(), " — pass a gradient");
      g = ones_like(root);
    }
    RG_CHECK(g.shape() == root.shape() && g.dtype() == root.dtype(), "backward: gradient ",
             g.describe(), " does not match output ", root.describe());
    root_edges.push_back(gradient_edge(root));
    root_grads.push_back(g);
  }

  // Count, for each node, how many edges point at it from the part of the graph reached.
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, std::shared_ptr<Node>> keep_alive;
  std::vector<Node*> stack;
  for (const Edge& e : root_edges) {
    if (keep_alive.emplace(e.node.get(), e.node).second) stack.push_back(e.node.get());
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& e : node->next_edges) {
      if (!e.node) continue;
      ++dependencies[e.node.get()];
      if (keep_alive.emplace(e.node.get(), e.node).second) stack.push_back(e.node.get());
    }
  }

  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto accumulate = [&](Node* node, int input_nr, const Tensor& g) {
    std::vector<Tensor>& buf = buffers[node];
    if (buf.empty()) buf.resize(node->outputs.size());
    Tensor& slot = buf[static_cast<std::size_t>(input_nr)];
    if (!slot.defined()) {
      slot = g;
    } else if (sole_owner(slot)) {
      add_inplace(slot, g);  // nobody else can see slot: add in place, no copy
    } else {
      // Never add into a tensor another node may still hold. The copy keeps slot's layout: a
      // channels-last activation used twice (a residual block's input) keeps a channels-last
      // gradient, which the convolutions' backward would otherwise convert back.
      Tensor sum = empty(slot.shape(), {slot.dtype(), slot.device()}, slot.suggest_memory_format());
      copy_strided(sum, slot);
      add_inplace(sum, g);
      slot = sum;
    }
  };
  for (std::size_t i = 0; i < root_edges.size(); ++i)
    accumulate(root_edges[i].node.get(), root_edges[i].input_nr, root_grads[i]);

  // Ready nodes run newest first (creation order, reversed), the order of the forward pass
  // reversed — so the last layer's parameters receive their gradients first, as DDP expects.
  auto later_first = [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> ready(later_first);
  for (auto& [node, _] : keep_alive)
    if (dependencies[node] == 0) ready.push(node);

  trace::detail::BackwardRuns runs;  // the timeline's backward spans, one per module
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    runs.node(*node);
    RG_CHECK(!node->released, "backward: trying to backward through the graph a second time (",
             node->name(),
             " already freed its saved tensors); pass retain_graph=true to the "
             "first backward if you need to backward twice");
    std::vector<Tensor> grads = std::move(buffers[node]);
    buffers.erase(node);
    grads.resize(node->outputs.size());
    for (std::size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) {
        const OutputMeta& m = node->outputs[i];
        grads[i] = zeros(m.shape, {m.dtype, m.device});
      }
    }
    std::vector<Tensor> input_grads = node->apply(grads);
    if (!retain_graph && !dynamic_cast<AccumulateGrad*>(node)) {
      node->release_saved();
      node->released = true;
    }
    RG_CHECK(input_grads.size() == node->next_edges.size() || input_grads.empty(), node->name(),
             ": returned ", input_grads.size(), " gradients for ", node->next_edges.size(),
             " inputs");
    for (std::size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.node) continue;
      const Tensor& g = input_grads.empty() ? Tensor() : input_grads[i];
      if (g.defined()) {
        const OutputMeta& m = e.node->outputs[static_cast<std::size_t>(e.input_nr)];
        RG_CHECK(g.shape() == m.shape && g.dtype() == m.dtype, node->name(),
                 ": gradient for input ", i, " is ", g.describe(), " but the input was ",
                 shape_str(m.shape), ' ', m.dtype);
        accumulate(e.node.get(), e.input_nr, g);
      }
      if (--dependencies[e.node.get()] == 0) ready.push(e.node.get());
    }
  }
  runs.finish();
  // By index: a callback may queue another one.
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    std::function<void()> fn = std::move(callbacks[i]);
    fn();
  }
}

void queue_backward_callback(std::function<void()> fn) {
  RG_CHECK(backward_callbacks != nullptr,
           "queue_backward_callback: no backward pass is running in this thread (call it from "
           "a node or a post-accumulate hook)");
  backward_callbacks->push_back(std::move(fn));
}

}  // namespace rg
