#pragma once
// cross_entropy(logits, target, weight, reduction, ignore_index, label_smoothing): softmax
// cross-entropy over class-index targets, exactly torch.nn.functional.cross_entropy, fused
// (log_softmax and the loss in one pass, one backward) — no (N, C) log-probability tensor is
// written or kept.
//   logits: (N, C) or (N, C, d1, ..., dk), or (C) for one unbatched sample
//   target: (N) or (N, d1, ..., dk), or () — i64 class indices in [0, C) or ignore_index
//   weight: (C), optional (undefined Tensor() = all ones); a constant, it gets no gradient
//   out:    reduction none: target's shape; mean, sum: ()
// With log p = log_softmax(logits) over C, class t = target[n], w = weight, ε = label_smoothing:
//   l_n = −w[t] · log p[n, t]                      (the nll term)
//   s_n = −Σ_c w[c] · log p[n, c]                   (the smoothing term: uniform target 1/C)
//   loss_n = (1 − ε) · l_n + (ε / C) · s_n          (0 where t == ignore_index)
//   none: loss        sum: Σ_n loss_n        mean: Σ_n loss_n / Σ_n w[t_n] (non-ignored n)
// The mean's denominator is the nll's — the total weight of the targets — for both terms (as
// PyTorch does; without weight it is the number of non-ignored elements). 0/0 = NaN when all
// are ignored.
// Backward, with p = softmax(logits) rebuilt from the saved logsumexp of each row:
//   gx[n, c] = g_n · [(1 − ε) · w[t] · (p_c − δ_ct) + (ε / C) · (p_c · Σ_k w[k] − w[c])]
// which without weight is g_n · (p − smoothed one-hot), smoothed one-hot = (1 − ε)·δ_t + ε/C;
// g_n = gy[n] (none), gy (sum) or gy / Σ w[t_n] (mean); 0 on ignored elements.
// The node keeps the logits, target, weight and one logsumexp per element (f64).
// A target outside [0, C) that is not ignore_index is an rg::Error naming it. On a GPU the
// kernel flags it and the flag is read the next time the host waits for that GPU anyway (the
// loss scaler's or the progress bar's read; core/deferred_checks.h): the error surfaces there,
// as an asynchronous CUDA error would, but it is recoverable — a device-side assert would end
// the process — and it costs no synchronisation of its own.

#include <cstdint>

#include "core/tensor.h"
#include "ops/reduction/reduction.h"

namespace rg {

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight = Tensor(),
                     Reduction reduction = Reduction::mean, int64_t ignore_index = -100,
                     double label_smoothing = 0.0);

}  // namespace rg
