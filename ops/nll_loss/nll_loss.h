#pragma once
// nll_loss(log_probs, target, weight, reduction, ignore_index): the negative log-likelihood
// of class-index targets, as torch.nn.functional.nll_loss.
//   log_probs: (N, C) or (N, C, d1, ..., dk), or (C) for one unbatched sample
//   target:    (N) or (N, d1, ..., dk), or () — i64 class indices in [0, C) or ignore_index
//   weight:    (C), optional (undefined Tensor() = all ones); a constant, it gets no gradient
//   out:       reduction none: target's shape; mean, sum: ()
// For each element n (a sample, or a sample's pixel) with class t = target[n]:
//   l_n = −weight[t] · log_probs[n, t]        (0 where t == ignore_index)
//   none: l        sum: Σ_n l_n        mean: Σ_n l_n / Σ_n weight[t_n]  (over non-ignored n)
// The mean divides by the total weight, not by N: with every target ignored (or every weight
// 0) it is 0/0 = NaN, as in PyTorch.
// Backward: gx[n, t] = −weight[t] · g_n, with g_n = gy[n] (none), gy (sum) or gy / Σ weight
// (mean); 0 elsewhere and on ignored elements. The node keeps target and weight, not x.
// A target outside [0, C) that is not ignore_index is an rg::Error naming it. On a GPU the
// kernel flags it and the flag is read the next time the host waits for that GPU anyway (the
// loss scaler's or the progress bar's read; core/deferred_checks.h): the error surfaces there,
// as an asynchronous CUDA error would, but it is recoverable — a device-side assert would end
// the process — and it costs no synchronisation of its own.

#include <cstdint>

#include "core/tensor.h"
#include "ops/reduction/reduction.h"

namespace rg {

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight = Tensor(),
                Reduction reduction = Reduction::mean, int64_t ignore_index = -100);

}  // namespace rg
