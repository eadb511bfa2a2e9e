#pragma once
// The kernels of dropout, on the CPU (dropout_cpu.cpp) and the GPU (dropout_kernels.cuh,
// dropout_cuda.cu). Internal to the ops layer.

#include <cstdint>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg::detail {

// One training-mode draw: mask_i = [philox_uniform_f32(seed, offset, i) >= threshold], kept
// elements scaled by `scale` (1/(1 − p), or 0 for p = 1).
struct DropoutDraw {
  uint64_t seed = 0, offset = 0;
  float threshold = 0;
  double scale = 1;
};

// mask (u8) and y = x · mask · scale; x, mask, y contiguous, same numel, on one device.
void dropout_forward(OnCpu, const Tensor& x, const DropoutDraw& draw, const Tensor& mask,
                     const Tensor& y);
void dropout_forward(OnCuda, const Tensor& x, const DropoutDraw& draw, const Tensor& mask,
                     const Tensor& y);

// gx = gy · mask · scale; all contiguous, same numel.
void dropout_backward(OnCpu, const Tensor& gy, const Tensor& mask, double scale, const Tensor& gx);
void dropout_backward(OnCuda, const Tensor& gy, const Tensor& mask, double scale, const Tensor& gx);

}  // namespace rg::detail
