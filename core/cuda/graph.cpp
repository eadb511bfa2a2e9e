// CUDA graphs (see graph.h): capture on a side stream, instantiate, launch.
#include "core/cuda/graph.h"

#include <cstdio>
#include <exception>

#include "core/cuda/cuda_check.h"
#include "core/error.h"

namespace rg::cuda {

Graph::Graph(int device)
    : device_(device), stream_(device), memory_(std::make_shared<GraphMemory>()) {
  memory_->device = device;
}

Graph::~Graph() {
  try {
    DeviceGuard guard(device_);
    if (exec_) RG_CUDA_WARN(cudaGraphExecDestroy(exec_));
    if (graph_) RG_CUDA_WARN(cudaGraphDestroy(graph_));
    // Frees held back for the graph go on their streams, after the work queued there: the side
    // stream (where the graph's own memory is freed) waits for the last launch first.
    Event last_launch(device_);
    last_launch.record(current_stream(device_));
    last_launch.block(stream_.get());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringgrad: warning: destroying a CUDA graph: %s\n", e.what());
  }
  release_graph_memory(*memory_);
}

void Graph::capture(const std::function<void()>& body) {
  RG_CHECK(!graph_, "cuda::Graph on cuda:", device_, ": captured already (once per graph)");
  DeviceGuard guard(device_);
  StreamGuard on_side_stream(device_, stream_.get());
  set_capture_memory(device_, memory_);
  auto stop = [&] { set_capture_memory(device_, nullptr); };
  // Relaxed: CUDA's "potentially unsafe" calls stay allowed — cudaHostAlloc when the pinned
  // cache grows for a table, cudaEventQuery of a pinned block's earlier copies — as the memory
  // rules above are ringgrad's own (graph.h). What truly conflicts with the capture (a wait on
  // the capturing stream, a synchronous copy there) still fails it. Other threads (a
  // DataLoader's) go on with their own work meanwhile.
  const cudaError_t began = cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeRelaxed);
  if (began != cudaSuccess) {
    stop();
    RG_CUDA_CHECK(began);
  }
  try {
    body();
  } catch (...) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(stream_.get(), &partial);
    if (partial) cudaGraphDestroy(partial);
    cudaGetLastError();
    stop();
    throw;
  }
  const cudaError_t ended = cudaStreamEndCapture(stream_.get(), &graph_);
  stop();
  if (ended != cudaSuccess) cudaGetLastError();
  RG_CHECK(ended == cudaSuccess, "cuda::Graph on cuda:", device_,
           ": the capture failed: cudaStreamEndCapture: ", cudaGetErrorName(ended), " (",
           cudaGetErrorString(ended),
           "); something inside it synchronised with the host or joined another stream");
  // AutoFreeOnLaunch: the memory the step still holds at its end is freed and made again at
  // each launch, at the same addresses (graph.h).
  RG_CUDA_CHECK(
      cudaGraphInstantiateWithFlags(&exec_, graph_, cudaGraphInstantiateFlagAutoFreeOnLaunch));
}

void Graph::replay() {
  RG_CHECK(exec_, "cuda::Graph on cuda:", device_, ": replay() before capture()");
  DeviceGuard guard(device_);
  RG_CUDA_CHECK(cudaGraphLaunch(exec_, current_stream(device_)));
  memory_->launched = true;
}

}  // namespace rg::cuda
