#pragma once
// upsample: enlarges the spatial dims by an integer factor S, as PyTorch's
// F.interpolate(x, scale_factor=S, mode=...).
//   x: (N, C, H, W) -> y: (N, C, H·S, W·S)
// nearest:  y[i, j] = x[floor(i / S), floor(j / S)] (integer division: exact for every S).
// bilinear: a source coordinate per output row (columns alike), then linear interpolation
//   between its two neighbours h0 = floor(src), h1 = min(h0 + 1, H − 1) with weights
//   (1 − λ, λ), λ = src − h0:
//   AlignCorners::off: src = max((i + 0.5) / S − 0.5, 0) — pixel centres; the edge rows are
//     clamped, so the first and last output rows copy the edge of x.
//   AlignCorners::on:  src = i · (H − 1) / (H·S − 1) — the corner pixels of x and y coincide.
// Coordinates and weights are computed in the compute type (float for f32), as PyTorch does.
// Backward: the transposed map — nearest: gx[a, b] = sum of gy over its S × S block;
// bilinear: each gy is scattered to its 4 neighbours with the same weights. The node keeps
// only the input shape and the options.
// Kernels: upsample_kernel.h (CPU: upsample_cpu.cpp; GPU: upsample_kernels.cuh).

#include "core/tensor.h"

namespace rg {

enum class UpsampleMode { nearest, bilinear };
// PyTorch's align_corners (bilinear only; PyTorch refuses it for nearest, and so does this).
enum class AlignCorners { off, on };

// Checks: 4-D floating input; scale_factor >= 1; AlignCorners::on only with bilinear.
Tensor upsample(const Tensor& x, int64_t scale_factor, UpsampleMode mode = UpsampleMode::nearest,
                AlignCorners align_corners = AlignCorners::off);

}  // namespace rg
