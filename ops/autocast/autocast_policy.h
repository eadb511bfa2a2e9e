#pragma once
// The autocast policy: the one place that decides which dtype an op's floating inputs take
// while autocast is on (core/autocast.h holds the state). Every op of the lists below calls
//
//   const auto [x, w, b] = autocast_inputs(AutocastPolicy::lower_precision, x_in, w_in, b_in);
//
// first thing, and then runs as it would on tensors of those dtypes. Outside autocast every
// policy returns its inputs untouched. The casts are ordinary differentiable casts (weights go
// through the per-step cache), so the gradients flow back in each input's own dtype.
//
//   policy            ops                                             inputs become
//   lower_precision   conv2d, conv_transpose2d, linear, matmul        the autocast dtype (f16 or
//                                                                     bf16); f64 is left alone
//   float32           softmax, log_softmax, cross_entropy, nll_loss,  f32 (16-bit inputs cast
//                     mse_loss, binary_cross_entropy_with_logits,     up); f32 and f64 left alone
//                     sum, mean
//   promote           add, sub, mul, div                              the widest floating dtype
//                                                                     among them (f16 with bf16:
//                                                                     f32), as PyTorch promotes
//
// Ops not listed run in whatever dtype they are given (relu, pooling, ...: exact or harmless in
// 16 bits). batch_norm is not listed either: it accepts a 16-bit input with f32 parameters and
// always computes its statistics in f64 (see ops/batch_norm). Outside autocast, mixing dtypes
// in add/sub/mul/div stays an error: ringgrad never converts silently in a plain f32 program.
// One exception to lower_precision, decided by the op from the machine and the shape: conv2d in
// bf16 on a CPU stays f32 where its f32 kernels are faster than its bf16 ones on every pass
// (ops/conv/conv2d/README.md, "bf16: the tiles or f32, by a rule") — the same result as O0 there.

#include <array>

#include "core/autocast.h"
#include "core/tensor.h"

namespace rg {

enum class AutocastPolicy { lower_precision, float32, promote };

// The dtype a floating input of dtype `input` takes under `policy` when autocast runs in
// `autocast` (f16 or bf16); `widest` is the promote target (ignored by the other policies).
DType autocast_target(AutocastPolicy policy, DType input, DType autocast, DType widest);

// The inputs as the op should see them (undefined and non-floating tensors pass through).
std::vector<Tensor> autocast_inputs(AutocastPolicy policy, std::vector<Tensor> inputs);

template <class... Ts>
std::array<Tensor, sizeof...(Ts)> autocast_inputs(AutocastPolicy policy, const Ts&... inputs) {
  std::array<Tensor, sizeof...(Ts)> out{inputs...};
  if (!autocast_enabled()) return out;  // the common case stays a branch
  std::vector<Tensor> cast = autocast_inputs(policy, std::vector<Tensor>{inputs...});
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::move(cast[i]);
  return out;
}

}  // namespace rg
