#pragma once
// binary_cross_entropy_with_logits(x, y, weight, pos_weight, reduction): sigmoid + binary
// cross-entropy in one numerically stable formula, as torch.nn.functional's.
//   x (logits), y (targets in [0, 1], floating): any shape, the same
//   weight:     optional, broadcastable to x's shape (per-element rescaling)
//   pos_weight: optional, broadcastable to x's shape — usually (C) for the last dim: the weight
//               of positive examples per class
//   out:        reduction none: x's shape; mean, sum: ()
// Elementwise, with lw = 1 + (pos_weight − 1)·y and log σ(x) = min(x, 0) − log1p(exp(−|x|)):
//   loss = weight · [(1 − y)·x − lw · log σ(x)]
// which equals −weight·[pos_weight·y·log σ(x) + (1 − y)·log(1 − σ(x))] but never evaluates
// exp of a large positive number nor log(0): for x = ±100 the naive form gives inf or NaN.
// Backward (weight and pos_weight are constants, as in PyTorch; the target is differentiable):
//   gx = g · weight · [(1 − y) − lw · σ(−x)]
//   gy = g · weight · [−x − (pos_weight − 1) · log σ(x)]
// with g = gy_out (none), gy_out (sum) or gy_out / numel (mean).

#include "core/tensor.h"
#include "ops/reduction/reduction.h"

namespace rg {

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = Tensor(),
                                        const Tensor& pos_weight = Tensor(),
                                        Reduction reduction = Reduction::mean);

}  // namespace rg
