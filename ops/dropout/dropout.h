#pragma once
// dropout(x, p, mode, generator): zeroes each element with probability p and scales the kept
// ones by 1/(1 − p), so E[y] = x.
//   train: y = x · mask / (1 − p),  mask_i = [u_i >= p],  u_i = philox_uniform_f32(seed, offset, i)
//          with (seed, offset) = (generator.seed(), generator.next_offset()) — one draw per call —
//          and i the row-major index of the element. The mask depends on (seed, offset, i) only,
//          never on the thread count. p = 1 gives zeros; p outside [0, 1] is an error.
//   eval:  y = x (the same tensor).
// Backward: gx = gy · mask / (1 − p) (the node keeps the mask as u8: 1 byte per element).
// The random stream differs from PyTorch's, so there is no PyTorch parity for the mask; the
// tests check the scaling, the kept fraction and mask/gradient consistency instead.
// Dtypes: f32, f64, f16, bf16.

#include "core/rng.h"
#include "core/tensor.h"

namespace rg {

enum class DropoutMode { train, eval };

Tensor dropout(const Tensor& x, double p, DropoutMode mode,
               Generator& generator = default_generator());

}  // namespace rg
