#pragma once
// The kernels of batch_norm (internal to ops/batch_norm).
//
// The whole op, per device: bn_forward / bn_backward on the CPU (batch_norm.cpp, over the
// kernels below) and on the GPU (batch_norm_cuda.cu, batch_norm_kernels.cuh). x is contiguous
// (N, C, *); the saved statistics mean and invstd are (C) f64 tensors on x's device.
//
// The CPU kernels: tensors contiguous (N, C, S) of one floating dtype, S = the product of the
// spatial dims (1 for (N, C) input); per-channel arrays are f64 with C entries. Reductions are
// split across threads by channel, each channel summed in a fixed order: results never depend on
// the thread count.

#include <cstdint>

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/batch_norm/batch_norm_math.h"

namespace rg::detail {

struct BnConfig {
  bool train = true;
  double momentum = 0.1, eps = 1e-5;
  // relu / gelu: batch_norm_relu / batch_norm_gelu, fused on either device (BnActivation is in
  // batch_norm_math.h, beside the activations' math).
  BnActivation act = BnActivation::none;
};

// y, and the statistics the backward needs (the batch's in train, the running ones in eval);
// in train the running stats, where given, are updated in place.
struct BnForward {
  Tensor y, mean, invstd;
  // (C) f64, with a fused activation only: what the backward recomputes its input from.
  Tensor scale, shift;
};

// What the backward of a fused op needs beside batch_norm's: the activation, and the forward's
// BnForward::scale and shift (act none: batch_norm's backward, both undefined).
struct BnActSaved {
  BnActivation act = BnActivation::none;
  Tensor scale, shift;
};
BnForward bn_forward(OnCpu, const Tensor& x, const Tensor& weight, const Tensor& bias,
                     const Tensor& running_mean, const Tensor& running_var, const BnConfig& config);
BnForward bn_forward(OnCuda, const Tensor& x, const Tensor& weight, const Tensor& bias,
                     const Tensor& running_mean, const Tensor& running_var, const BnConfig& config);

// The gradients asked for (the others undefined); gw and gb in param_dtype.
struct BnWants {
  bool x = true, weight = true, bias = true;
};
struct BnBackward {
  Tensor gx, gweight, gbias;
};
// With a fused activation (`fused`), the backward of batch_norm_relu / batch_norm_gelu: gy is
// read through the activation's derivative at the value the forward gave it.
BnBackward bn_backward(OnCpu, const Tensor& gy, const Tensor& x, const Tensor& weight,
                       const Tensor& mean, const Tensor& invstd, bool train, BnWants wants,
                       DType param_dtype, const BnActSaved& fused = {});
BnBackward bn_backward(OnCuda, const Tensor& gy, const Tensor& x, const Tensor& weight,
                       const Tensor& mean, const Tensor& invstd, bool train, BnWants wants,
                       DType param_dtype, const BnActSaved& fused = {});

// The per-pass kernels that the SyncBatchNorm pieces run on either device (the host computes
// the per-channel coefficients between them): x, gy contiguous (N, C, *); every per-channel
// argument a (C) f64 tensor on x's device. Formulas as the CPU kernels below.
void bn_stats(OnCpu, const Tensor& x, const Tensor& mean, const Tensor& m2);
void bn_stats(OnCuda, const Tensor& x, const Tensor& mean, const Tensor& m2);
void bn_elemt(OnCpu, const Tensor& x, const Tensor& y, const Tensor& mean, const Tensor& scale,
              const Tensor& shift);
void bn_elemt(OnCuda, const Tensor& x, const Tensor& y, const Tensor& mean, const Tensor& scale,
              const Tensor& shift);
void bn_backward_reduce(OnCpu, const Tensor& gy, const Tensor& x, const Tensor& mean,
                        const Tensor& sum_dy, const Tensor& sum_dy_xmu);
void bn_backward_reduce(OnCuda, const Tensor& gy, const Tensor& x, const Tensor& mean,
                        const Tensor& sum_dy, const Tensor& sum_dy_xmu);
void bn_backward_elemt(OnCpu, const Tensor& gy, const Tensor& x, const Tensor& gx,
                       const Tensor& mean, const Tensor& k, const Tensor& a, const Tensor& b);
void bn_backward_elemt(OnCuda, const Tensor& gy, const Tensor& x, const Tensor& gx,
                       const Tensor& mean, const Tensor& k, const Tensor& a, const Tensor& b);

// num_batches_tracked += 1 (batch_norm_count.h): n contiguous i64 counters.
void bn_count(OnCpu, const Tensor& counter);
void bn_count(OnCuda, const Tensor& counter);

struct BnDims {
  int64_t n = 0, c = 0, s = 1;
};
BnDims bn_dims(const Tensor& x);  // x: (N, C, *)

// mean[c] = Σ x / M and m2[c] = Σ (x − mean[c])², both accumulated in f64 (M = N·S; zeros
// when M = 0).
void bn_stats_cpu(const Tensor& x, double* mean, double* m2);
// The fused ops' activation in the passes below. Forward: y = act(v) with
// v = bn_math::affine(x, mean[c], scale[c], shift[c]) (bn_math::activate). Backward: v is
// recomputed from x and the forward's scale and shift (the same arithmetic, so the same v), and
// gy is read as act'(v)·gy (bn_math::activation_grad: relu's mask [v > 0], gelu's derivative) —
// no saved output, no stored gradient of v.
struct BnActGrad {
  BnActivation act = BnActivation::none;
  const double* scale = nullptr;  // (C): the forward's invstd·weight
  const double* shift = nullptr;  // (C): the forward's bias
};
BnActGrad act_grad_of(const BnActSaved& saved);  // pointers into saved's tensors

// y = (x − mean[c])·scale[c] + shift[c]; with an activation, y = act(affine(x, …)).
void bn_elemt_cpu(const Tensor& x, const Tensor& y, const double* mean, const double* scale,
                  const double* shift, BnActivation act = BnActivation::none);
// sum_dy[c] = Σ gy, sum_dy_xmu[c] = Σ gy·(x − mean[c]) (gy through `act` where it has one).
void bn_backward_reduce_cpu(const Tensor& gy, const Tensor& x, const double* mean, double* sum_dy,
                            double* sum_dy_xmu, const BnActGrad& act = {});
// gx = (gy − a[c] − (x − mean[c])·b[c])·k[c] (gy through `act` where it has one).
void bn_backward_elemt_cpu(const Tensor& gy, const Tensor& x, const Tensor& gx, const double* mean,
                           const double* k, const double* a, const double* b,
                           const BnActGrad& act = {});

}  // namespace rg::detail
