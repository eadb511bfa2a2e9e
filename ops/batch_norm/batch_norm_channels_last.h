#pragma once
// batch_norm and batch_norm_relu on channels-last activations (internal to ops/batch_norm).
//
// A channels-last (N, C, H, W) tensor is, byte for byte, a contiguous (M, C) matrix of its
// M = N·H·W rows (N·D·H·W for channels_last_3d), and BatchNorm of (N, C, H, W) is BatchNorm of
// that matrix: the same per-channel statistics over the same M values. So a channels-last input
// runs as its rows, through the op's own kernels for (N, C) input — on a GPU the element passes
// are then coalesced as they are, and the per-channel sums take the row kernels of
// batch_norm_rows_kernels.cuh (a warp reads 32 neighbouring channels of a row) — and the result
// is the same memory seen back as (N, C, H, W) in x's format: no conversion either way.
//
//   x: (N, C, H, W) channels-last  ->  rows: (M, C)  ->  batch_norm  ->  (M, C)  ->  y: (N, C, H,
//   W)
//
// Both views are differentiable (the gradient is viewed back the other way, made dense in the
// format first), so batch_norm's own backward node runs unchanged on the rows.

#include <functional>

#include "core/tensor.h"

namespace rg::detail {

// Whether batch_norm runs `x` as its rows: x is channels-last or channels-last-3d (and not
// also plainly contiguous, as a (N, 1, H, W) or (N, C, 1, 1) tensor is: those run as they are).
bool bn_runs_on_rows(const Tensor& x);

// The (M, C) rows of channels-last x, sharing its memory (differentiable).
Tensor channels_last_rows(const Tensor& x);

// Contiguous (M, C) rows seen as `shape` (N, C, ...) in channels-last `format`, sharing memory
// (differentiable).
Tensor rows_as_channels_last(const Tensor& rows, const Shape& shape, MemoryFormat format);

// f(rows of x), seen back in x's shape and format.
Tensor bn_over_rows(const Tensor& x, const std::function<Tensor(const Tensor&)>& f);

}  // namespace rg::detail
