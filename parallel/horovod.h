#pragma once
// The Horovod-style API: the workflow of the Horovod tutorials, on ringgrad's process groups.
//
//   rg::parallel::init();                                  // MPI world (mpi helper), or set_world
//   auto model = nn::make_model("resnet18");
//   SGD sgd(model->parameters(), {.lr = 0.1 * size()});   // linear LR scaling (with warm-up)
//   broadcast_parameters(*model, 0);                      // every rank starts from rank 0's
//   broadcast_optimizer_state(sgd, 0);                    //   weights and optimizer state
//   DistributedOptimizer opt(sgd);                        // averages gradients before step()
//   DistributedSampler sampler(n, world());               // each rank its share of the data
//   ...  loss.backward(); opt.step();
//   double acc = allreduce_metric(local_acc, "val_acc");  // the same number on every rank
//   if (rank() == 0) save_checkpoint(...);
//
// DistributedOptimizer vs DDP: both average gradients across ranks. DDP buckets them and
// overlaps the allreduces with backward; DistributedOptimizer (like Horovod) launches one
// allreduce per parameter from its post-accumulate hook, as each gradient is complete —
// it also overlaps with backward, but without fusing small tensors into large messages.
// Use one or the other, not both.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"
#include "optim/optimizer.h"
#include "parallel/process_group.h"
#include "parallel/world.h"

namespace rg::parallel {

// Copies root's tensors into every rank's, in place: a model's state_dict() (parameters and
// buffers share storage with the model) or any named tensors. The same names on every rank.
void broadcast_parameters(const std::map<std::string, Tensor>& tensors, int root,
                          ProcessGroup& group = world());
void broadcast_parameters(const nn::Module& module, int root, ProcessGroup& group = world());

// Makes every rank's optimizer state (hyperparameters, momentum buffers, moments, step
// counts) root's, through Optimizer::state_dict() / load_state_dict(). Works whether or not
// the other ranks' optimizers have state yet (before the first step they have none).
void broadcast_optimizer_state(Optimizer& optimizer, int root, ProcessGroup& group = world());

// Root's string on every rank (Horovod's broadcast_object, for anything serialised: JSON
// metadata, a checkpoint's verdict). Every rank must call it; the others' `text` is ignored.
std::string broadcast_object(const std::string& text, int root, ProcessGroup& group = world());

// The sum or average of a scalar over all ranks (Horovod's hvd.allreduce(value, name=...)).
// `name` labels errors (a rank that did not join, a timeout). Every rank must call it.
double allreduce_metric(double value, const std::string& name, ReduceOp op = ReduceOp::average,
                        ProcessGroup& group = world());
// Elementwise over a tensor of metrics; returns a reduced copy (f64 accumulation).
Tensor allreduce_metric(const Tensor& value, const std::string& name,
                        ReduceOp op = ReduceOp::average, ProcessGroup& group = world());

struct DistributedOptimizerOptions {
  // Backward passes whose gradients accumulate locally before one allreduce and one step()
  // (gradient accumulation: divide the loss by it for a mean over the passes).
  int backward_passes_per_step = 1;
  ReduceOp op = ReduceOp::average;  // or sum
};

// Wraps an optimizer (which must outlive the wrapper): each parameter's gradient is
// allreduced once it has accumulated backward_passes_per_step backward passes — launched from
// its post-accumulate hook, during backward — and step() waits for them, then steps the
// wrapped optimizer. A parameter that received no gradient joins the allreduce with zeros, so
// ranks agree (it then has a zero gradient). More backward passes than
// backward_passes_per_step before step() is an error naming the parameter.
class DistributedOptimizer {
 public:
  explicit DistributedOptimizer(Optimizer& optimizer, DistributedOptimizerOptions options = {},
                                std::shared_ptr<ProcessGroup> group = nullptr);
  ~DistributedOptimizer();
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  // Waits for (and launches any missing) gradient allreduces: the gradients are then the
  // average over ranks. step() calls it; call it yourself to clip gradients before step().
  void synchronize();
  void step();  // synchronize(), then the wrapped optimizer's step()
  void zero_grad() { optimizer_.zero_grad(); }
  Optimizer& optimizer() { return optimizer_; }
  StateDict state_dict() const { return optimizer_.state_dict(); }
  void load_state_dict(const StateDict& state) { optimizer_.load_state_dict(state); }

  struct State;  // what the hooks share (horovod.cpp)

 private:
  Optimizer& optimizer_;
  std::shared_ptr<State> state_;
};

}  // namespace rg::parallel
