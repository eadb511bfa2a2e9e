#pragma once
// The fused cross_entropy CPU kernels. Internal to the ops layer.

#include <cstdint>

#include "core/tensor.h"
#include "ops/reduction/reduction.h"

namespace rg::detail {

struct CrossEntropyArgs {
  Lanes lanes;  // (N, C, inner) around the class dim
  Reduction reduction = Reduction::mean;
  int64_t ignore_index = -100;
  double label_smoothing = 0;
};

// The loss (target's shape for Reduction::none, else ()); also returns the logsumexp of every
// element (f64, target's shape) and the total weight Σ w[t_n] over non-ignored elements.
Tensor cross_entropy_cpu(const Tensor& logits, const Tensor& target, const Tensor& weight,
                         const CrossEntropyArgs& args, Tensor& lse, double& total_weight);

// gx (logits' shape) for the upstream gradient gy (the loss's shape).
Tensor cross_entropy_backward_cpu(const Tensor& gy, const Tensor& logits, const Tensor& target,
                                  const Tensor& weight, const Tensor& lse,
                                  const CrossEntropyArgs& args, double total_weight);

}  // namespace rg::detail
