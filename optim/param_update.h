#pragma once
// What the steps of optim/ (SGD, AdamW, the loss scaler, clipping) do around their fused
// kernels: they run on contiguous working views, and a tensor that was not contiguous gets
// its view's result copied back.

#include "core/tensor.h"

namespace rg::detail {

struct WorkingView {
  Tensor original, work;  // work: original itself when contiguous, else a contiguous copy
};

// Parameters and gradients are normally contiguous: no copy then.
inline WorkingView working_view(const Tensor& t) {
  return {t, t.contiguous()};
}

// Copies the result into a non-contiguous original (on its device).
inline void write_back(const WorkingView& v) {
  if (!v.work.same_as(v.original)) copy_strided(v.original, v.work);
}

}  // namespace rg::detail
