#pragma once
// Mirrored and shifted copies of a batch of images (N, C, H, W), on any device: the views of
// test-time augmentation (airbench94's TTA: each image, its mirror, and its shifts by one pixel
// up-left and down-right with reflection, each with its mirror). On a GPU one kernel each
// (device_batch_kernels.cuh), on the CPU the same element function in a loop (device_batch.h),
// so the logits averaged over the views do not need the batch on the host. Not differentiable:
// they augment inputs, under NoGradGuard.

#include <cstdint>

#include "core/tensor.h"
#include "data/device_batch.h"

namespace rg::data {

// The images shifted by (dy, dx), then mirrored when asked: out[n][c][y][x] =
// images[n][c][y + dy][x' + dx], x' = W - 1 - x when mirrored, x otherwise, the coordinates
// reflected at the border without repeating the edge (|dy| < H, |dx| < W).
// images: (N, C, H, W) f32, f64, f16 or bf16.
Tensor shifted_view(const Tensor& images, int64_t dy, int64_t dx, Mirror mirror);
// The images mirrored left-right.
Tensor flip_horizontal(const Tensor& images);
// The images shifted by `by` = ±1 pixel along both axes, reflected at the border: the crops
// [0:H, 0:W] (by = -1) and [2:H+2, 2:W+2] (by = 1) of F.pad(images, 1, 'reflect').
Tensor shift_reflect(const Tensor& images, int64_t by);

}  // namespace rg::data
