#pragma once
// GPU pieces shared by the class-target losses' kernels (nll_loss, cross_entropy).

#include "core/cuda/kernel.h"
#include "core/tensor.h"
#include "ops/reduction/reduction.h"

namespace rg::class_target_cuda {
inline namespace RG_KERNEL_BUILD {

// The class of lane n, or −1 for an ignored lane and for a target outside [0, C): that lane's
// loss is skipped and the smallest such lane kept in *bad_lane (read back by check_bad_lane).
__device__ inline int64_t lane_class(const int64_t* target, int64_t n, int64_t classes,
                                     int64_t ignore_index, long long* bad_lane) {
  const int64_t t = target[n];
  if (t == ignore_index) return -1;
  if (t < 0 || t >= classes) {
    atomicMin(bad_lane, static_cast<long long>(n));
    return -1;
  }
  return t;
}

// The offset of class c of lane n in the (outer, C, inner) input.
RG_HOST_DEVICE inline int64_t class_offset(int64_t n, int64_t c, const Lanes& l) {
  return (n / l.inner * l.size + c) * l.inner + n % l.inner;
}

// A tensor's data for a kernel, or null for an undefined (optional) one such as the weight.
template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg::class_target_cuda
