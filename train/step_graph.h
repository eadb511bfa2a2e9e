#pragma once
// --cuda-graphs: the training step — zeroing the gradients, forward and loss, backward,
// clipping, the optimizer's update — captured once in a CUDA graph and replayed for every later
// batch of the same shapes, one launch where eager execution makes hundreds (issue 40; PyTorch's
// torch.cuda.graphs "whole network capture" recipe).
//
//   steps 1..warm_up        eager: cuDNN's plans chosen, the optimizer's state made (momentum
//                           buffers start at the first gradient), the allocator warm
//   the next full batch     copied into the graph's own input tensors; the step captured with
//                           them (core/cuda/graph.h), then replayed — a capture runs nothing
//   later full batches      copied into those inputs, replayed
//   a batch of another shape (the epoch's last, partial one) runs eagerly
//
// A change of which parameters train (airbench94 freezes its whitening bias after a few epochs)
// changes the step: the graph is dropped and the step captured again.
// Before every step the optimizer's rates are written to the device scalars its update reads
// (Optimizer::keep_lr_on_device): the schedule goes on moving them on the host. What the step
// returns (the loss, the metric sums) are the graph's own tensors, overwritten by the next
// replay: read them before then (the loop adds them to its running sums, on the device).
// A run qualifies when nothing in the step waits for the host: check() says what stops it.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "data/batch_source.h"
#include "optim/optim.h"
#include "train/task.h"

namespace rg::train {

// What StepGraph records and launches: core/cuda/graph.h's Graph (step_graph_cuda.cpp). The
// constructor takes another for the tests of the bookkeeping around it.
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
  virtual void capture(const std::function<void()>& body) = 0;
  virtual void replay() = 0;
};

// A CUDA graph on `device`; throws on a build without CUDA.
std::unique_ptr<CapturedWork> make_cuda_graph(const Device& device);

class StepGraph {
 public:
  // make_work: the graph to capture into (default: make_cuda_graph(device)).
  StepGraph(const Device& device, int64_t warm_up_steps,
            std::function<std::unique_ptr<CapturedWork>()> make_work = nullptr);
  ~StepGraph();

  // Throws naming what stops a captured step: a device other than a GPU, a loss scaler (its
  // verdict is read on the host every step), more than one replica, a timeline (--trace), an
  // optimizer whose update takes host scalars, or gradient accumulation (several batches per
  // step). Then keeps the optimizer's rates on the device.
  static void check(const std::string& program, const Device& device, const MixedPrecision& amp,
                    bool one_replica, bool tracing, Optimizer& optimizer,
                    int64_t accumulate_steps = 1);

  // One step over `batch`; `eager` runs it as the loop would (zero_grad to optimizer update),
  // on the batch it is given.
  StepOutput step(const data::Batch& batch, Optimizer& optimizer,
                  const std::function<StepOutput(const data::Batch&)>& eager);

  int64_t replays() const { return replays_; }
  int64_t eager_steps() const { return eager_steps_; }

 private:
  Device device_;
  int64_t warm_up_steps_;
  std::function<std::unique_ptr<CapturedWork>()> make_work_;
  std::unique_ptr<CapturedWork> work_;
  std::vector<bool> trainable_;  // requires_grad of the optimizer's parameters at the capture
  data::Batch inputs_;           // the captured step's own batch
  StepOutput outputs_;           // what the captured step returned: the graph's tensors
  int64_t steps_ = 0, replays_ = 0, eager_steps_ = 0;
};

}  // namespace rg::train
