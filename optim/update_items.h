#pragma once
// The fused steps of optim/, by device: what SGD, AdamW, the loss scaler and gradient clipping
// hand to their kernels. Each entry point without a tag groups its tensors by device and calls
// the CPU loops (update_cpu.cpp) or one CUDA launch per device (update_cuda.cu, kernels in
// optim_kernels.cuh) through dispatch_device. Tensors here are contiguous working views; the
// callers copy results back into non-contiguous originals.

#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"
#include "optim/update_math.h"

namespace rg::detail {

struct SgdItem {
  Tensor param, grad, buffer;  // buffer undefined without momentum
  int64_t index = 0;           // the parameter's index in the optimizer
  SgdScalars scalars;
};

struct AdamWItem {
  Tensor param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq;  // the last undefined without AMSGrad
  int64_t index = 0;
  AdamWScalars scalars;
};

void sgd_step(const std::vector<SgdItem>& items);
void sgd_step(OnCpu, const std::vector<SgdItem>& items);
void sgd_step(OnCuda, const std::vector<SgdItem>& items);

void adamw_step(const std::vector<AdamWItem>& items);
void adamw_step(OnCpu, const std::vector<AdamWItem>& items);
void adamw_step(OnCuda, const std::vector<AdamWItem>& items);

// Lookahead::update on one tensor: its average (a contiguous clone of the same shape and dtype).
struct LookaheadItem {
  Tensor tensor, average;
};

// Every item's average ← average + (1 − decay)·(tensor − average), then tensor ← average: the
// CPU loops, or one launch per CUDA device.
void lookahead_update(const std::vector<LookaheadItem>& items, double decay);
void lookahead_update(OnCpu, const std::vector<LookaheadItem>& items, double decay);
void lookahead_update(OnCuda, const std::vector<LookaheadItem>& items, double decay);

// grads[i] ← grads[i] / S (inv_scale = 1/S) in place; returns the smallest indices[i] whose
// gradient held inf or NaN before, or -1. The CUDA path reads one integer back per device.
int64_t unscale_grads(const std::vector<Tensor>& grads, const std::vector<int64_t>& indices,
                      double inv_scale);
int64_t unscale_grads(OnCpu, const std::vector<Tensor>& grads, const std::vector<int64_t>& indices,
                      double inv_scale);
int64_t unscale_grads(OnCuda, const std::vector<Tensor>& grads, const std::vector<int64_t>& indices,
                      double inv_scale);

// Gradient clipping, all gradients on one device: norm and coef are one-element f64 tensors on
// that device, computed there (coef = max_norm / (norm + 1e-6) when that is < 1 and the norm is
// finite, else 1; max_norm < 0: norm only, coef undefined); scale_grads multiplies the gradients
// by coef where it is < 1. On cuda nothing is read back to the host.
struct NormAndCoef {
  Tensor norm, coef;
};
NormAndCoef total_norm(OnCpu, const std::vector<Tensor>& grads, const Device& device, double p,
                       double max_norm);
NormAndCoef total_norm(OnCuda, const std::vector<Tensor>& grads, const Device& device, double p,
                       double max_norm);
void scale_grads(OnCpu, const std::vector<Tensor>& grads, const Tensor& coef);
void scale_grads(OnCuda, const std::vector<Tensor>& grads, const Tensor& coef);

}  // namespace rg::detail
