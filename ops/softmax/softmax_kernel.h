#pragma once
// The CPU kernels of softmax and log_softmax: one pass finds the lane maximum and the sum of
// exponentials, one writes the result. Internal to the ops layer.

#include "core/tensor.h"

namespace rg::detail {

enum class SoftmaxKind { softmax, log_softmax };

// y = softmax(x) or log_softmax(x) along `dim` (already normalised); any floating dtype.
Tensor softmax_cpu(const Tensor& x, int64_t dim, SoftmaxKind kind);

// softmax:     gx = y · (gy − Σ gy·y)
// log_softmax: gx = gy − exp(y) · Σ gy
Tensor softmax_backward_cpu(const Tensor& gy, const Tensor& y, int64_t dim, SoftmaxKind kind);

}  // namespace rg::detail
