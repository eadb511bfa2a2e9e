#pragma once
// What the convolution's and the transposed convolution's backward nodes share (conv.cpp,
// transpose/conv_transpose.cpp).

#include <vector>

#include "core/tensor.h"

namespace rg::detail {

// Which of (x, weight, bias) need a gradient: an input without one needs no (GEMM-sized)
// computation, e.g. backward-data of the first layer, whose input is the data.
struct ConvGradsNeeded {
  bool x, weight, bias;
};
inline ConvGradsNeeded conv_grads_needed(const Tensor& x, const Tensor& weight,
                                         const Tensor& bias) {
  return {x.requires_grad(), weight.requires_grad(), bias.defined() && bias.requires_grad()};
}

// The node's inputs: x, weight, and the bias where there is one.
inline std::vector<Tensor> conv_inputs(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  std::vector<Tensor> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return inputs;
}

}  // namespace rg::detail
