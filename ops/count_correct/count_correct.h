#pragma once
// count_correct(logits, labels): how many rows of logits have their largest value at their
// label's column — a classifier's correct predictions — as a 0-d f64 on the logits' device, so
// that counting a training step's accuracy never waits for the device.
//   logits: (N, K) floating (f32, f64, f16, bf16)   labels: (N) i64   -> () f64
// The largest value is max(logits, 1)'s (ops/max): the first of equal maxima, NaN above all
// numbers. A label outside [0, K) matches no column (counted wrong, never read as an index; the
// loss that uses the same labels reports it). Not differentiable: the result records no history.
// One kernel on a GPU, where max, two casts, five pointwise ops and a sum took nine.

#include "core/tensor.h"

namespace rg {

Tensor count_correct(const Tensor& logits, const Tensor& labels);

}  // namespace rg
