#pragma once
// The kernels of the fused cross_entropy, on the CPU (cross_entropy_cpu.cpp) and the GPU
// (cross_entropy_kernels.cuh, cross_entropy_cuda.cu). Internal to the ops layer.

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/nll_loss/class_target.h"

namespace rg::detail {

struct CrossEntropyArgs : ClassTargetArgs {
  double label_smoothing = 0;
};

// The loss (target's shape for Reduction::none, else ()) with the total weight Σ w[t_n] over
// non-ignored elements, and the logsumexp of every element (f64, target's shape) that the
// backward rebuilds the probabilities from. Checks the targets' range.
struct CrossEntropyForward {
  ReducedLoss reduced;
  Tensor lse;
};
CrossEntropyForward cross_entropy_forward(OnCpu, const Tensor& logits, const Tensor& target,
                                          const Tensor& weight, const CrossEntropyArgs& args);
CrossEntropyForward cross_entropy_forward(OnCuda, const Tensor& logits, const Tensor& target,
                                          const Tensor& weight, const CrossEntropyArgs& args);

// gx (logits' shape) for the upstream gradient gy (the loss's shape).
Tensor cross_entropy_backward(OnCpu, const Tensor& gy, const Tensor& logits, const Tensor& target,
                              const Tensor& weight, const Tensor& lse, const CrossEntropyArgs& args,
                              const Tensor& total_weight);
Tensor cross_entropy_backward(OnCuda, const Tensor& gy, const Tensor& logits, const Tensor& target,
                              const Tensor& weight, const Tensor& lse, const CrossEntropyArgs& args,
                              const Tensor& total_weight);

}  // namespace rg::detail
