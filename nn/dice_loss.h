#pragma once
// Segmentation losses built from ops (their gradients come from the ops' nodes):
//
// soft_dice_loss(logits, target, smooth) — multi-class soft Dice:
//   logits (N, C, *) floating, target (N, *) i64 class indices in [0, C)
//   p = softmax(logits, dim 1), t = one-hot(target) as (N, C, *)
//   per class c, summed over the batch and every position (the batch is one volume):
//     I_c = Σ p_c·t_c,  P_c = Σ p_c,  T_c = Σ t_c
//   loss = mean over c of 1 − (2·I_c + smooth) / (P_c + T_c + smooth)          -> ()
//   A class absent from both target and prediction scores ≈ 1 (loss ≈ 0), thanks to smooth.
//
// bce_dice_loss(logits, target) — the BCEDiceLoss of 4uiiurz1/pytorch-nested-unet, losses.py
// (commit 4e36fdd), the seeds' loss:
//   logits, target: (N, *) floating, the same shape; targets in [0, 1] (a soft mask)
//   bce  = binary_cross_entropy_with_logits(logits, target), mean over every element
//   per sample n, over its flattened positions: p = σ(logits)
//     dice_n = (2·Σ p·t + 1e-5) / (Σ p + Σ t + 1e-5)
//   loss = 0.5·bce + (1 − Σ_n dice_n / N)                                     -> ()
//
// Both check their inputs and refuse targets out of range (class indices outside [0, C), mask
// values outside [0, 1]); that check reads one scalar back from the target's device.

#include "ops/ops.h"

namespace rg::nn {

Tensor soft_dice_loss(const Tensor& logits, const Tensor& target, double smooth = 1e-5);
Tensor bce_dice_loss(const Tensor& logits, const Tensor& target);

// (N, *) i64 class indices -> (N, C, *) of 0 and 1 in `dtype`, on the target's device; built
// from pointwise ops: relu(1 − (t − c)²) is 1 where t = c and 0 for every other integer.
Tensor one_hot(const Tensor& target, int64_t num_classes, DType dtype);

class SoftDiceLoss {
 public:
  explicit SoftDiceLoss(double smooth = 1e-5) : smooth_(smooth) {}
  Tensor operator()(const Tensor& logits, const Tensor& target) const {
    return soft_dice_loss(logits, target, smooth_);
  }

 private:
  double smooth_;
};

class BCEDiceLoss {
 public:
  Tensor operator()(const Tensor& logits, const Tensor& target) const {
    return bce_dice_loss(logits, target);
  }
};

}  // namespace rg::nn
