#pragma once
// The kernels of count_correct, declared for count_correct.cpp: contiguous logits (N, K) and
// labels (N) i64 (the op makes them so); out a 0-d f64 on their device. And the per-row test that
// the CPU loop and the CUDA kernel share.

#include "core/dispatch.h"
#include "core/macros.h"
#include "core/tensor.h"
#include "ops/max/max_functors.h"

namespace rg {

void count_correct(OnCpu, const Tensor& out, const Tensor& logits, const Tensor& labels);
void count_correct(OnCuda, const Tensor& out, const Tensor& logits, const Tensor& labels);

// Whether a row's argmax is `label`, in max(x, 1)'s order (max_beats: the first of equal maxima,
// NaN above all); a label outside [0, k) never is. Compared in C, the dtype's compute type.
template <class C, class T>
RG_HOST_DEVICE inline bool row_is_correct(const T* row, int64_t k, int64_t label) {
  if (label < 0 || label >= k) return false;
  int64_t best_at = 0;
  C best = static_cast<C>(row[0]);
  for (int64_t j = 1; j < k; ++j) {
    const C v = static_cast<C>(row[j]);
    if (max_beats(v, best)) {
      best = v;
      best_at = j;
    }
  }
  return best_at == label;
}

}  // namespace rg
