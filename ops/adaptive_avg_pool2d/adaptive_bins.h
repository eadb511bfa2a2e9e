#pragma once
// The bins of adaptive_avg_pool2d, host/device (the CPU and GPU kernels share them): bin i of
// `out` bins over `in` positions is [floor(i·in/out), ceil((i+1)·in/out)), in integers so that
// no rounding of a float ratio can shift a bin edge.

#include <cstdint>

#include "core/macros.h"

namespace rg::detail {

RG_HOST_DEVICE inline int64_t bin_start(int64_t i, int64_t in, int64_t out) {
  return (i * in) / out;
}
RG_HOST_DEVICE inline int64_t bin_end(int64_t i, int64_t in, int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}

// The bins holding position p: from floor(p·out/in) (bin_end(o) > p ⇔ (o+1)·in > p·out) to
// floor(((p+1)·out − 1)/in) (bin_start(o) <= p ⇔ o·in < (p+1)·out).
RG_HOST_DEVICE inline int64_t first_bin_holding(int64_t p, int64_t in, int64_t out) {
  return (p * out) / in;
}
RG_HOST_DEVICE inline int64_t last_bin_holding(int64_t p, int64_t in, int64_t out) {
  return ((p + 1) * out - 1) / in;
}

}  // namespace rg::detail
