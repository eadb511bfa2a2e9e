#pragma once
// leaky_relu(x, negative_slope) = x for x > 0, negative_slope · x otherwise; elementwise.
// Backward: gx = gy for x > 0, negative_slope · gy otherwise (at x = 0 the slope side, as in
// PyTorch). The node saves the input x: the sign of the output tells the side only when
// negative_slope >= 0, and any slope (even negative or > 1) is allowed here.

#include "core/tensor.h"

namespace rg {

Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);

}  // namespace rg
