#pragma once
// upsample: enlarges the spatial dims by an integer factor S, as PyTorch's
// F.interpolate(x, scale_factor=S, mode=...).
//   images:  x: (N, C, H, W)    -> y: (N, C, H·S, W·S)        modes nearest, bilinear
//   volumes: x: (N, C, D, H, W) -> y: (N, C, D·S, H·S, W·S)   modes nearest, trilinear
// nearest:  y[i, j] = x[floor(i / S), floor(j / S)] (integer division: exact for every S);
//   volumes alike, y[k, i, j] = x[floor(k / S), floor(i / S), floor(j / S)].
// bilinear: a source coordinate per output row (columns alike), then linear interpolation
//   between its two neighbours h0 = floor(src), h1 = min(h0 + 1, H − 1) with weights
//   (1 − λ, λ), λ = src − h0:
//   AlignCorners::off: src = max((i + 0.5) / S − 0.5, 0) — pixel centres; the edge rows are
//     clamped, so the first and last output rows copy the edge of x.
//   AlignCorners::on:  src = i · (H − 1) / (H·S − 1) — the corner pixels of x and y coincide.
// trilinear: the same rule along D, H and W; y = λd0·(bilinear of plane d0) + λd1·(bilinear of
//   plane d1) — PyTorch's order: the outermost dim interpolates last.
// Coordinates and weights are computed in the compute type (float for f32), as PyTorch does.
// Backward: the transposed map — nearest: gx[a, b] = sum of gy over its S × S (× S) block;
// bilinear (trilinear): each gy is scattered to its 4 (8) neighbours with the same weights. The
// node keeps only the input shape and the options.
// Kernels: upsample_kernel.h (CPU: upsample_cpu.cpp, upsample3d_cpu.cpp; GPU:
// upsample_kernels.cuh).

#include "core/tensor.h"

namespace rg {

enum class UpsampleMode { nearest, bilinear, trilinear };
// PyTorch's align_corners (bilinear and trilinear; PyTorch refuses it for nearest, and so does
// this).
enum class AlignCorners { off, on };

// Checks: floating input, 4-D for bilinear, 5-D for trilinear, either for nearest;
// scale_factor >= 1; AlignCorners::on only with bilinear or trilinear.
Tensor upsample(const Tensor& x, int64_t scale_factor, UpsampleMode mode = UpsampleMode::nearest,
                AlignCorners align_corners = AlignCorners::off);

}  // namespace rg
