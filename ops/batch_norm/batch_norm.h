#pragma once
// batch_norm: normalises every channel of x over the batch and spatial dims.
//   x: (N, C, *) — (N, C), (N, C, L) or (N, C, H, W); M = N·(product of *) values per channel
//   weight, bias: (C) or undefined (no affine transform)
//   running_mean, running_var: (C) or undefined (statistics not tracked)
// With σ = sqrt(var + eps) and x̂ = (x − μ)/σ:   y = x̂·weight + bias.
//   train: μ, var = the batch's per-channel mean and *biased* variance Σ(x − μ)²/M (M > 1).
//          Running stats, when given, are updated in place with the *unbiased* variance, as in
//          PyTorch:  running_mean ← (1 − momentum)·running_mean + momentum·μ
//                    running_var  ← (1 − momentum)·running_var  + momentum·Σ(x − μ)²/(M − 1)
//   eval:  μ, var = running_mean, running_var (which must be given).
// Backward, train: gx = (w/σ)·(gy − mean(gy) − x̂·mean(gy·x̂)),  gw = Σ gy·x̂,  gb = Σ gy
//           eval:  gx = gy·w/σ (the statistics are constants),  gw, gb as in train.
// (means and sums per channel, over the M values.) Dtypes: f32, f64, f16, bf16, all tensors the
// same dtype — or, for an f16/bf16 input, f32 weight, bias and running stats (cuDNN's mixed
// mode, used by O2 mixed precision): y and gx then have the input's dtype, gweight and gbias
// f32. Statistics are always computed in f64.
//
// On a GPU, batch_norm runs this project's kernels (batch_norm_kernels.cuh), not cuDNN's: cuDNN 9
// offers batch norm only through its graph API (the legacy entry points are deprecated), and
// its norm graphs get no engine where there is no driver, so a cuDNN path could not be run or
// tested on the machines that build ringgrad; ours runs here through the kernel emulator. The
// statistics and coefficients never leave the device. (The pieces below run their passes over x
// there too, and their per-channel arithmetic on the host.)
//
// The pieces below are the same computation split where SyncBatchNorm (parallel/) needs to
// combine ranks — the design of PyTorch's native SyncBN kernels:
//   forward:  stats = batch_norm_stats(x) on each rank -> gather -> batch_norm_combine_stats
//             -> batch_norm_update_running_stats, invstd = batch_norm_invstd(stats, eps)
//             -> y = batch_norm_elemt(x, w, b, stats.mean, invstd)
//   backward: sums = batch_norm_backward_reduce(gy, x, mean, invstd) -> allreduce both sums
//             -> gx = batch_norm_backward_elemt(gy, x, w, mean, invstd, sums, global count),
//             gw = sums.sum_dy_xhat, gb = sums.sum_dy.
// The pieces record no autograd history; per-channel results are f64 tensors of shape (C).

#include <vector>

#include "core/tensor.h"

namespace rg {

enum class BatchNormMode { train, eval };

Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, BatchNormMode mode,
                  double momentum = 0.1, double eps = 1e-5);

// relu(batch_norm(...)) as one op, the BatchNorm→ReLU of every ResNet block. On the CPU the
// relu is fused into batch_norm's passes: forward y = max((x − μ)·(w/σ) + b, 0) is written
// once; backward recomputes the relu's mask [(x − μ)·(w/σ) + b > 0] from x and the forward's
// per-channel coefficients and reads gy through it, so no relu output or masked gradient is
// stored, written or read again (forward 2 passes over x instead of 4, backward 5 instead of
// 8 tensor reads and writes). The value before the relu is computed with one fma (the backward
// must recompute it exactly); the mask is taken on that value before it is rounded to x's
// dtype. Against relu(batch_norm(...)): the same per-channel sums of the same masked gy, so
// results agree bit for bit except where the fma rounds differently from batch_norm's
// multiply-add (the fused op's tests state how often). The GPU kernels fuse it the same way.
Tensor batch_norm_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, BatchNormMode mode,
                       double momentum = 0.1, double eps = 1e-5);

// gelu(batch_norm(...)) as one op, the BatchNorm→GELU of airbench94 (gelu: PyTorch's exact, erf
// nn.GELU, ops/gelu), fused as batch_norm_relu is — the same passes with gelu for the relu:
// forward y = gelu(v), v = (x − μ)·(w/σ) + b written once; backward recomputes v from x and the
// forward's per-channel coefficients and reads gy as gy·gelu'(v) in both of its passes (no gelu
// input, output or gradient stored). gelu runs in the type gelu(batch_norm(...)) runs it in (f32
// for f32 and 16-bit data, f64 for f64) on v rounded to it, so against the unfused pair results
// differ only where v's fma rounds differently from batch_norm's multiply-add.
Tensor batch_norm_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, BatchNormMode mode,
                       double momentum = 0.1, double eps = 1e-5);

// ---- pieces for SyncBatchNorm --------------------------------------------------------------

// Per-channel statistics of one shard of the batch. M2 (not the variance) so shards of
// different sizes merge exactly (Chan et al.); count 0 (an empty shard) gives zeros, no NaN.
struct BatchNormStats {
  int64_t count = 0;  // M: values per channel
  Tensor mean;        // (C) f64
  Tensor m2;          // (C) f64, Σ (x − mean)²
};
BatchNormStats batch_norm_stats(const Tensor& x);
// Merges shards (e.g. gathered from every rank) with Chan's pairwise formulas; empty shards
// are skipped.
BatchNormStats batch_norm_combine_stats(const std::vector<BatchNormStats>& parts);
// 1/sqrt(m2/count + eps): (C) f64.
Tensor batch_norm_invstd(const BatchNormStats& stats, double eps);
// The momentum update of the running stats (in place) with the unbiased variance m2/(count−1);
// needs count > 1. Either tensor may be undefined (not tracked).
void batch_norm_update_running_stats(const Tensor& running_mean, const Tensor& running_var,
                                     const BatchNormStats& stats, double momentum);
// y = (x − mean)·invstd·weight + bias; mean, invstd: (C), any floating dtype.
Tensor batch_norm_elemt(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        const Tensor& mean, const Tensor& invstd);

// Per-channel sums of the backward pass: Σ gy and Σ gy·x̂ (x̂ from the given mean/invstd).
struct BatchNormGradSums {
  Tensor sum_dy;       // (C) f64 = grad of bias
  Tensor sum_dy_xhat;  // (C) f64 = grad of weight
};
BatchNormGradSums batch_norm_backward_reduce(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                             const Tensor& invstd);
// gx = (w·invstd)·(gy − sum_dy/count − x̂·sum_dy_xhat/count), count = M over all shards.
// With undefined sums (eval mode: constant statistics) gx = gy·w·invstd.
Tensor batch_norm_backward_elemt(const Tensor& gy, const Tensor& x, const Tensor& weight,
                                 const Tensor& mean, const Tensor& invstd,
                                 const BatchNormGradSums& sums, int64_t count);

}  // namespace rg
