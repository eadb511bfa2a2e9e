#pragma once
// pad: constant padding of the last dimensions, as torch.nn.functional.pad(x, pad, "constant",
// value) — what a UNet decoder uses to align an upsampled map with its skip connection.
//
//   pad = {left_last, right_last, left_second_last, right_second_last, ...}: pairs from the
//   LAST dimension backwards (F.pad's order), an even count of at most 2·x.dim().
//   y.size(d) = x.size(d) + left + right, and y is `value` except where it overlaps x:
//     y[..., i + left, ...] = x[..., i, ...]   (per padded dimension)
//   A negative amount crops that many elements from that side (F.pad's negative padding).
//
// Backward: gx = pad(gy, −pad) — the crop of gy to x's region (negating the amounts swaps
// padding and cropping), so the node keeps only the amounts.
// Any dtype (the gradient needs a floating one), on any device: a fill and one strided copy.

#include <vector>

#include "core/tensor.h"

namespace rg {

Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, double value = 0);

}  // namespace rg
