// make_cuda_graph's CUDA side (step_graph.cpp): core/cuda/graph.h's Graph behind CapturedWork.
#include "core/cuda/graph.h"
#include "train/step_graph.h"

namespace rg::train {

namespace {

class CudaStepGraph final : public CapturedWork {
 public:
  explicit CudaStepGraph(int device) : graph_(device) {}
  void capture(const std::function<void()>& body) override { graph_.capture(body); }
  void replay() override { graph_.replay(); }

 private:
  cuda::Graph graph_;
};

}  // namespace

std::unique_ptr<CapturedWork> cuda_graph_on(const Device& device) {
  return std::make_unique<CudaStepGraph>(device.index);
}

}  // namespace rg::train
