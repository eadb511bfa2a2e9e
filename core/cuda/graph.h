#pragma once
// CUDA graphs: a stretch of GPU work captured once and launched again as one unit, so that a
// training step of fixed shapes costs one launch instead of hundreds (issue 40). Included only
// by CUDA-only translation units (it pulls in <cuda_runtime.h>).
//
//   rg::cuda::Graph step(0);
//   step.capture([&] { ...the step's ops... });  // recorded on a side stream; nothing runs
//   step.replay();                                // runs it on the current stream
//   step.replay();                                // the same kernels on the same memory again
//
// What a capture asks of the code inside it, and how ringgrad meets it:
// - No host read and no synchronisation: CUDA refuses them while capturing (a synchronous copy's
//   error names the call), and a random draw refuses itself (core/graph_capture.h).
// - Memory. The allocator's cudaMallocAsync and cudaFreeAsync inside the capture become the
//   graph's own allocation and free nodes, at addresses fixed for the graph's life. What the
//   step still holds at its end (gradients, the loss) is freed and made again at each launch
//   (cudaGraphInstantiateFlagAutoFreeOnLaunch): tensors made inside the capture and kept after
//   it see each replay's values. While the graph lives, the allocator holds back two kinds of
//   free (core/cuda/cuda_allocator.h): of the graph's own memory, which stays the graph's, and
//   of memory made before the capture and dropped inside it, which the graph's kernels may read
//   at every launch. Both are freed when the graph goes.
// - Host memory a captured copy reads (the optimizer's multi-tensor tables) is read again at
//   every launch: the pinned allocator keeps such blocks, unchanged, while the graph lives.
// - Values that change from step to step must live on the device and be written before each
//   launch: the learning rate (Optimizer::keep_lr_on_device); the batch (copied into the
//   captured step's own input tensors).

#include <cuda_runtime.h>

#include <functional>
#include <memory>

#include "core/cuda/cuda_allocator.h"
#include "core/cuda/stream.h"

namespace rg::cuda {

class Graph {
 public:
  explicit Graph(int device);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Runs `body` with a side stream current for the device, in capture mode: its work is
  // recorded, not run. Once per graph. Throws rg::Error when the capture fails (the body
  // synchronised, read the host, or used another stream), the graph then unusable.
  void capture(const std::function<void()>& body);
  // Launches the captured work on the device's current stream.
  void replay();
  int device() const { return device_; }

 private:
  int device_;
  Stream stream_;  // the capture's; the graph's own memory stays allocated "on" it
  std::shared_ptr<GraphMemory> memory_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace rg::cuda
