#pragma once
// Argument checks shared by the losses over class-index targets (nll_loss, cross_entropy).
// Internal to the ops layer.

#include <cstdint>
#include <string_view>

#include "core/tensor.h"
#include "ops/reduction/reduction.h"

namespace rg::detail {

// Checks input (N, C, d...) / (C), target (N, d...) / () i64, weight (C) and that every target
// is in [0, C) or ignore_index (throws naming the first bad value and C). Returns the input as
// lanes around the class dim: outer = N, size = C, inner = d1·…·dk; lane n = a·inner + i is
// target element n.
Lanes check_class_target(std::string_view op, const Tensor& input, const Tensor& target,
                         const Tensor& weight, int64_t ignore_index);

}  // namespace rg::detail
