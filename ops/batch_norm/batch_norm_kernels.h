#pragma once
// CPU kernels of batch_norm (internal to ops/batch_norm). Tensors are contiguous (N, C, S) of
// one floating dtype, S = the product of the spatial dims (1 for (N, C) input); per-channel
// arrays are f64 with C entries. Reductions are split across threads by channel, each channel
// summed in a fixed order: results never depend on the thread count.

#include <cstdint>

#include "core/tensor.h"

namespace rg::detail {

struct BnDims {
  int64_t n = 0, c = 0, s = 1;
};
BnDims bn_dims(const Tensor& x);  // x: (N, C, *)

// mean[c] = Σ x / M and m2[c] = Σ (x − mean[c])², both accumulated in f64 (M = N·S; zeros
// when M = 0).
void bn_stats_cpu(const Tensor& x, double* mean, double* m2);
// y = (x − mean[c])·scale[c] + shift[c].
void bn_elemt_cpu(const Tensor& x, const Tensor& y, const double* mean, const double* scale,
                  const double* shift);
// sum_dy[c] = Σ gy, sum_dy_xmu[c] = Σ gy·(x − mean[c]).
void bn_backward_reduce_cpu(const Tensor& gy, const Tensor& x, const double* mean, double* sum_dy,
                            double* sum_dy_xmu);
// gx = (gy − a[c] − (x − mean[c])·b[c])·k[c].
void bn_backward_elemt_cpu(const Tensor& gy, const Tensor& x, const Tensor& gx, const double* mean,
                           const double* k, const double* a, const double* b);

}  // namespace rg::detail
