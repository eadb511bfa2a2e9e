#pragma once
// The plumbing SGD and AdamW share around their elementwise update loops: autograd off,
// contiguous working views, and the grain of rg::parallel_for.

#include <cstdint>

#include "core/autograd.h"
#include "core/tensor.h"

namespace rg::detail {

// Below this many elements an update runs on one thread: the loop is memory-bound and a
// thread hand-off costs more than it saves.
inline constexpr int64_t kUpdateGrain = 1 << 14;

// Calls update(p, g) with contiguous versions of param and grad (the same storage when already
// contiguous; parameters are normally contiguous leaves) and copies p back into a
// non-contiguous param. Autograd is off: an update is not part of any graph.
template <class F>
void update_param(const Tensor& param, const Tensor& grad, F&& update) {
  NoGradGuard no_grad;
  Tensor p = param.contiguous();
  Tensor g = grad.contiguous();
  update(p, g);
  if (!p.same_as(param)) copy_strided(param, p);
}

}  // namespace rg::detail
