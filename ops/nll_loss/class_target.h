#pragma once
// What the losses over class-index targets (nll_loss, cross_entropy) share: argument checks, the
// range check of the targets, and the reductions of per-lane losses. Internal to the ops layer.

#include <cstdint>
#include <string_view>

#include "core/tensor.h"
#include "ops/reduction/reduction.h"

namespace rg::detail {

struct ClassTargetArgs {
  Lanes lanes;  // (N, C, inner) around the class dim; lane n = a·inner + i is target element n
  Reduction reduction = Reduction::mean;
  int64_t ignore_index = -100;
};

// Checks input (N, C, d...) / (C), target (N, d...) / () i64, weight (C), and that all three
// are on one device. Returns the input as lanes around the class dim. The targets' range is
// checked by the kernels: check_target_range on the CPU, a flag the GPU kernels raise.
Lanes check_class_target(std::string_view op, const Tensor& input, const Tensor& target,
                         const Tensor& weight);

// Throws naming the first target outside [0, C) that is not ignore_index (a serial host pass:
// cheap next to the loss, and the error names the first bad value). CPU tensors.
void check_target_range(std::string_view op, const Tensor& target, int64_t classes,
                        int64_t ignore_index);

// The GPU kernels skip a target outside [0, C) and write the smallest such lane into a 0-d i64
// `bad_lane` that starts as the number of lanes. The check throws as check_target_range does
// when it was written. On a GPU it is deferred (core/deferred_checks.h) to the next time the
// host waits for that device — reading it at once would stall every training step — so the
// error surfaces there, naming the op, like an asynchronous CUDA error; the loss returned in
// the meantime leaves the bad lanes out. Host memory (the emulator's tests) is checked at once.
void check_bad_lane(std::string_view op, const Tensor& bad_lane, const Tensor& target,
                    int64_t classes, int64_t ignore_index);

// The loss's reduction from per-lane losses and target weights (f64, target's shape, 0 on
// ignored lanes), on their device: none, the losses in `dtype`; sum, Σ loss; mean, Σ loss / Σ
// weight. total_weight (0-d f64, same device) is Σ weight, which a mean's backward divides by.
struct ReducedLoss {
  Tensor loss;
  Tensor total_weight;
};
ReducedLoss reduce_lane_losses(const Tensor& lane_loss, const Tensor& lane_weight,
                               Reduction reduction, DType dtype);

}  // namespace rg::detail
